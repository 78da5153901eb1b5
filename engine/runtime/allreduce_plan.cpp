// SPDX-License-Identifier: MIT
// plan_allreduce (contract in allreduce_plan.h).
#include "engine/runtime/allreduce_plan.h"

#include "engine/core/error.h"
#include "kernels/conv2d.h"

namespace dt {

namespace {

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Why a share of `share` leaf units is not an aligned block of 2^k leaves of `leaf` units, or
/// "" when it is.
std::string block_problem(int64_t share, int64_t leaf, const char* unit, ReduceSite site) {
    if (share % leaf == 0 && power_of_two(share / leaf)) return "";
    return str("a process's share of ", share, " ", unit, " is not a power-of-two number of ",
               reduce_site_name(site), "'s leaves of ", leaf);
}

/// The first reason the tree over the parts differs from the single process's, or "".
std::string tree_problem(const SplitShape& s, const ReduceSiteSpecs& specs,
                         const std::vector<int64_t>& conv_positions) {
    if (s.processes == 1 && s.micro_steps == 1) return "";  // one part: the whole batch
    if (s.micro_steps > 1)
        return "micro-batches are added in order, not by the tree (leave --micro-batch out)";
    if (s.batchnorm && !s.sync_batchnorm)
        return "batch norm without --sync-bn normalises each process's part on its own";
    for (ReduceSite site : all_reduce_sites()) {
        if (!reduce_site_crosses_samples(site)) continue;
        const AccumMode m = specs[static_cast<std::size_t>(site)].mode;
        if (m != AccumMode::kTree)
            return str(reduce_site_name(site), " is ", accum_mode_name(m),
                       ": each process rounds its part before the parts meet");
    }
    if (s.tied_parameters)
        return "a tied parameter adds the gradients of its two uses before the parts meet";
    auto tree = [&](ReduceSite site) {
        return specs[static_cast<std::size_t>(site)].mode == AccumMode::kTree;
    };
    const int64_t P = s.processes, R = s.rows_per_sample;
    for (const int64_t B : s.batch_sizes) {
        if (B % P != 0)
            return str("a batch of ", B, " samples does not split evenly over ", P, " processes");
        const int64_t S = B / P;
        // One leaf per sample (per sequence for a language model's embed.grad and ln.grad).
        for (ReduceSite site : {ReduceSite::kBnStats, ReduceSite::kBnBackward,
                                ReduceSite::kEmbedGrad, ReduceSite::kLnGrad})
            if (tree(site))
                if (std::string p = block_problem(S, 1, "samples", site); !p.empty()) return p;
        // One leaf per sample, or per token row: linear.wgrad, bias.grad, loss.
        for (ReduceSite site : {ReduceSite::kLinearWgrad, ReduceSite::kBiasGrad, ReduceSite::kLoss})
            if (tree(site))
                if (std::string p = block_problem(S * R, 1, R > 1 ? "rows" : "samples", site);
                    !p.empty())
                    return p;
        if (tree(ReduceSite::kConvWgrad))
            for (const int64_t positions : conv_positions)
                if (std::string p = block_problem(S, kernels::conv2d_tree_group(positions),
                                                  "samples", ReduceSite::kConvWgrad);
                    !p.empty())
                    return p;
    }
    return "";
}

}  // namespace

AllreducePlan plan_allreduce(const SplitShape& split, const ReduceSiteSpecs& specs,
                             const std::vector<int64_t>& conv_positions) {
    DT_CHECK(split.processes >= 1, "plan_allreduce: processes must be at least 1");
    const AccumMode m = specs[static_cast<std::size_t>(ReduceSite::kGradAllreduce)].mode;
    if (m != AccumMode::kTree) return {accum_mode_name(m), ""};
    std::string why = tree_problem(split, specs, conv_positions);
    if (why.empty()) return {"tree-invariant", ""};
    return {"tree-gather", std::move(why)};
}

}  // namespace dt
