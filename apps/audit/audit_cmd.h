// SPDX-License-Identifier: MIT
// `detrain audit` (issue 22, docs/audit.md): where two runs that should be identical part ways.
//   detrain audit [train flags] --vs "<flags of run B>" --steps N [--json]
// trains the configuration (run A) and the same with the --vs flags appended (run B) for N
// steps each, with the hash trail of every op output, gradient and weight
// (engine/autograd/trace.h), and reports the first entry whose bits differ, the element
// statistics of that tensor (a second pass keeps its values), how the difference spreads, and
// whether the final weights differ.
//   detrain audit --traces A B [--json]
// compares two trace files of `detrain train --trace FILE` (runs made at other times or on other
// machines): hashes only.
//   detrain audit --error [train flags] --steps N [--json]
// measures, over N training steps, every accumulation mode's rounding error against the exact
// mode at every reduction site (apps/audit/audit_error.h).
//   detrain audit --matrix [train flags] [--json]
// checks every site x mode under a rerun, a thread-count change, permuted rows and every
// instruction set, and evaluation's batch invariance (apps/audit/audit_matrix.h).
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dt {

struct AuditFlags {
    std::string vs;                   // flags of run B, appended to run A's
    int64_t steps = 3;                // training steps per run
    bool json = false;                // one JSON object on stdout instead of the table
    std::string json_out;             // --json-out FILE: the JSON object written to FILE too
    std::vector<std::string> traces;  // --traces A B
    bool error = false;               // --error: rounding error per site and mode
    bool matrix = false;              // --matrix: which sites stay stable under which change
};

/// Adds the `audit` subcommand (its own flags into `flags`; other flags are train flags).
CLI::App* add_audit_command(CLI::App& app, AuditFlags& flags);

/// Runs a parsed `audit`; returns the exit status (0 identical or compared, 1 errors are thrown).
int run_audit_command(const CLI::App& audit, const AuditFlags& flags);

}  // namespace dt
