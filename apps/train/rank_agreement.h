// SPDX-License-Identifier: MIT
// What every process of a data-parallel run must share (docs/distributed.md, several hosts):
// the detrain build and recipe, the resolved flags, and the training data's contents. Not the
// thread count, the instruction set or the data directory's path: the bits do not depend on them.
// Rank 0's description is broadcast and each rank compares its own; a rank that differs ends the
// whole job (Collective::abort) naming the first field that differs. A world of one checks
// nothing.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/train/train_config.h"
#include "datasets/dataset.h"

namespace dt {

/// Seeds drawn as `random`: rank 0 draws from the OS and every rank gets its draw (all ranks
/// resolve the same flags, so they draw as often and in the same order). One process: the OS.
uint64_t rank0_entropy();

/// Ends the job when `mine` (a JSON object) differs from rank 0's, naming `what` and the first
/// key that differs with both values.
void check_same_on_every_rank(const std::string& what, const nlohmann::ordered_json& mine);

/// The build, recipe and resolved flags, without the per-host ones (threads, isa, data-dir,
/// progress, out).
nlohmann::ordered_json run_fingerprint(const TrainConfig& cfg);
/// The training and test data: sizes, shapes and a 64-bit hash of pixels and labels.
nlohmann::ordered_json data_fingerprint(const Dataset& train, const Dataset& test);

}  // namespace dt
