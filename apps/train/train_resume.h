// SPDX-License-Identifier: MIT
// `detrain train --resume DIR`: the configuration a checkpointed run continues with, or, when DIR
// holds no checkpoint yet (the run was stopped before its first one), the run's plan
// (run_plan.json, written before the first step) started anew into DIR, so that `--resume DIR`
// alone restarts a run killed at any moment. Without a plan, the run's flags given with --resume
// start it anew into DIR (a job system that repeats one command); --resume DIR alone is then
// refused, as is a DIR that holds a finished run (result.json) and no checkpoint.
// The run's own configuration (the checkpoint's or plan's "config" and "noise", random seeds as
// drawn),
// with the run-only flags applied when given (run_option_flags: --threads, --isa, --device,
// --progress, --data-dir, --checkpoint-every, --stop-after, ...; results do not depend on them).
// Any other flag given must repeat the run's value, so that re-running the original command with
// --resume appended is accepted; a flag that differs is refused with the list of differences,
// unless --force, which applies them. The noise flags act as a group: when any is given, the noise
// configuration they make (a `random` seed keeps the run's draw) must equal the run's.
#pragma once
#include <string>
#include <vector>

#include "apps/train/checkpoint.h"
#include "apps/train/train_config.h"

namespace dt {

/// True when DIR holds a checkpoint to continue. False when it holds none (a missing DIR too);
/// throws ValueError when DIR holds a finished run (its result.json) but no checkpoint.
bool resume_has_checkpoint(const std::string& dir);

/// The configuration of a --resume run that starts from the beginning with the given flags (no
/// checkpoint and no plan in DIR): the given flags, writing into DIR. Throws ValueError when
/// --out names another directory, and when no flag but run options is given (`--resume DIR`
/// alone: DIR holds no run to continue; the message says what is missing).
TrainConfig restart_config(const TrainConfig& given, const std::vector<std::string>& flags);

/// The note that says so, for the start of the run.
std::string restart_note(const std::string& dir);
/// The note of a restart from DIR's run plan.
std::string plan_restart_note(const std::string& dir);

/// Flags that may differ between a run and its resumption (and --resume, --force themselves).
const std::vector<std::string>& resume_compatible_flags();

/// The differences between the flags given (long names, `flags`, values in `given`) and the
/// run recorded in `ck` (a checkpoint or a run plan), one line each: "--lr: the run has 0.0004,
/// given 0.001". Flags with no counterpart in a run's configuration (e.g. --replay) are listed as
/// not combinable.
std::vector<std::string> resume_differences(const RecordedRun& ck, const TrainConfig& given,
                                            const std::vector<std::string>& flags);

/// The finalized configuration to resume with (see the header). Throws ValueError listing
/// resume_differences unless given.force, which applies them (listed in *forced when given: the
/// noise values there are those applied); IoError when the checkpoint's configuration cannot be
/// read.
TrainConfig resume_config(const RecordedRun& ck, const TrainConfig& given,
                          const std::vector<std::string>& flags,
                          std::vector<std::string>* forced = nullptr);

}  // namespace dt
