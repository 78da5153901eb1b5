// SPDX-License-Identifier: MIT
// `detrain audit --matrix`: the switchboard's guarantees checked on the user's machine. For every
// reduction site and accumulation mode, one training run (the other sites exact, so that only
// this site can move bits) is repeated under each change, and the site's outputs are compared
// bit for bit (per-sample tensors row by row, mapped through the permutation):
//   rerun          the same configuration again (atomic: really nondeterministic)
//   threads 1      --threads 1 instead of 2
//   permuted rows  --shuffle-within-batch 3 (the samples of every batch in another order)
//   isa X          --isa X, for every instruction set this CPU has
// and for a run on a device (--device cuda), whose kernels no thread count or instruction set
// changes, instead of those two:
//   cpu            --device cpu: the device's bits against the cpu's
// plus one row for evaluation (batch invariance): a sample's logits evaluated in its batch, in
// the reversed batch, alone, in half the batch, at one thread and on every instruction set (on a
// device: again, reversed, and with the model moved to the cpu).
// A cell says "stable" when every compared tensor kept its bits, "differs" when some did not.
#pragma once
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dt {

struct MatrixCell {
    int64_t compared = 0, differing = 0;  // tensors of the site compared, and those that differed
    bool stable() const { return differing == 0; }
};

struct MatrixRow {
    std::string site, mode;         // site "evaluation": the batch-invariance row
    std::vector<MatrixCell> cells;  // one per column
};

struct AuditMatrix {
    std::vector<std::string> columns;
    std::vector<MatrixRow> rows;
};

/// Runs the matrix for the configuration of `flags` (train flags; --steps training steps per
/// run). `note` is told about each row as it starts.
AuditMatrix run_audit_matrix(const std::vector<std::string>& flags, int64_t steps,
                             const std::function<void(const std::string&)>& note);

nlohmann::json matrix_json(const AuditMatrix& m);
void print_matrix(std::FILE* out, const AuditMatrix& m);

}  // namespace dt
