// SPDX-License-Identifier: MIT
// What the combination of a split batch's parts guarantees (docs/distributed.md), decided before
// training from every batch size of the run and every cross-sample site's leaves, and reported
// in the banner and result.json ("allreduce").
//
// Under grad.allreduce tree, a process's partial of a site is the tree (kernels/common/
// reduce_tree.h) over its own leaves, and the processes' partials are combined by the tree over
// ranks 0..P-1. That is the single process's tree over the whole batch's leaves exactly when
// every process holds an aligned block of 2^k leaves (the tree's blocks property): its share S
// of every batch is the same, and S is a power-of-two multiple of every tree site's leaf. Leaves:
// one sample (linear.wgrad, bias.grad, bn.stats, bn.backward, loss, embed.grad, ln.grad), one
// token row for a language model's linear.wgrad, bias.grad and loss, and conv2d_tree_group of the
// output positions for conv.wgrad. Then the run is "tree-invariant": the weights of one process
// for this P. Otherwise it is "tree-gather": the same bits run to run at this P only.
// Micro-batches are added in order, not by the tree; batch norm without synchronised statistics
// normalises each part on its own; a cross-sample site in any other mode rounds each process's
// part before the parts meet (an exact one too: only grad.allreduce exact exchanges unrounded
// sums); a tied parameter adds its two uses' gradients first. Each makes it tree-gather. A run
// of one process without micro-batches has one part: tree-invariant. Other grad.allreduce modes
// report their name: exact (the same bits for any P), kahan, permuted, atomic.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/noise/reduce_sites.h"

namespace dt {

/// How a run splits its batches.
struct SplitShape {
    int processes = 1;
    int64_t micro_steps = 1;           // the most micro-steps of any batch (1: none)
    std::vector<int64_t> batch_sizes;  // every batch size of the run (the full and the last one)
    int64_t rows_per_sample = 1;       // loss rows per sample: a language model's tokens
    bool batchnorm = false;            // the model has batch norm
    bool sync_batchnorm = true;        // --sync-bn on
    bool tied_parameters = false;      // Model::ties_parameters
};

struct AllreducePlan {
    std::string kind;  // tree-invariant, tree-gather, exact, kahan, permuted or atomic
    std::string why;   // the reason for tree-gather (the first one found), else ""
};

/// The plan of the header comment; conv_positions: Model::conv_positions().
AllreducePlan plan_allreduce(const SplitShape& split, const ReduceSiteSpecs& specs,
                             const std::vector<int64_t>& conv_positions);

}  // namespace dt
