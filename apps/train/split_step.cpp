// SPDX-License-Identifier: MIT
// The split-batch training step (contract in split_step.h).
#include "apps/train/split_step.h"

#include <algorithm>
#include <optional>

#include "apps/train/trainer_noise.h"
#include "apps/train/trainer_trace.h"
#include "datasets/sampler.h"
#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/noise_config.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/softmax_xent.h"

namespace dt {

int64_t micro_steps(int64_t B, int P, int64_t micro_batch) {
    if (micro_batch <= 0) return 1;
    const int64_t most = (B + P - 1) / P;  // the largest share
    return std::max<int64_t>(1, (most + micro_batch - 1) / micro_batch);
}

SplitPlan split_plan(int64_t B, int rank, int P, int64_t micro_batch) {
    const int64_t k = micro_steps(B, P, micro_batch);
    // The smallest part: the smallest share, floor(B / P), cut into k.
    DT_CHECK_VALUE(B / P >= k, "a batch of ", B, " samples cannot be split over ", P, " processes",
                   k > 1 ? str(" x ", k, " micro-batches") : std::string(),
                   ": every part needs a sample (hint: fewer processes, a larger --micro-batch, or "
                   "a --batch-size / --limit-train whose last batch has at least ",
                   P * k, " samples)");
    auto share = [&](int64_t r) { return r * B / P; };
    const int64_t lo = share(rank), s = share(rank + 1) - lo;
    SplitPlan plan;
    plan.rows.resize(static_cast<std::size_t>(k));
    plan.concurrent.assign(static_cast<std::size_t>(k), 0);
    for (int64_t j = 0; j < k; ++j) {
        for (int64_t i = lo + j * s / k; i < lo + (j + 1) * s / k; ++i)
            plan.rows[static_cast<std::size_t>(j)].push_back(i);
        for (int r = 0; r < P; ++r) {  // every process's micro-step j, for batch-norm's count
            const int64_t sr = share(r + 1) - share(r);
            plan.concurrent[static_cast<std::size_t>(j)] += (j + 1) * sr / k - j * sr / k;
        }
    }
    return plan;
}

AllreducePlan allreduce_plan_of(const TrainConfig& cfg, const BatchLoader& loader,
                                const Model& model, int P) {
    SplitShape s;
    s.processes = P;
    const int64_t n = loader.num_batches();
    if (n > 0) s.batch_sizes = {loader.batch_rows(0), loader.batch_rows(n - 1)};
    for (const int64_t B : s.batch_sizes)
        s.micro_steps = std::max(s.micro_steps, micro_steps(B, P, cfg.micro_batch));
    s.rows_per_sample = model.rows_per_sample();
    for (const NamedParam& p : model.params())
        s.batchnorm = s.batchnorm || p.role == ParamRole::kBnRunningMean;
    s.sync_batchnorm = cfg.sync_bn == "on";
    s.tied_parameters = model.ties_parameters();
    return plan_allreduce(s, reduce_site_specs(cfg.noise), model.conv_positions());
}

void check_split(const BatchLoader& loader, int P, int64_t micro_batch) {
    const int64_t n = loader.num_batches();
    for (int64_t b : {int64_t{0}, n - 1}) {
        if (b < 0) continue;
        try {
            (void)split_plan(loader.batch_rows(b), 0, P, micro_batch);
        } catch (const ValueError& e) {
            throw ValueError(
                str(b == n - 1 && n > 1 ? "the last batch of an epoch: " : "", e.what()));
        }
    }
}

bool overlap_on(const std::string& mode, bool on_gpu, int threads, int process_cores,
                int host_cores, int host_processes) {
    if (mode != "auto") return mode == "on";
    if (on_gpu) return true;
    const int cores = std::min(process_cores, host_cores / std::max(1, host_processes));
    return cores >= threads + 1;
}

float split_step(BatchSplit& split, const TrainConfig& cfg, const BatchLoader& loader, Model& model,
                 int e, int64_t b, int64_t& images) {
    Collective& ranks = world();
    const int64_t B = loader.batch_rows(b);
    std::vector<int64_t> order(static_cast<std::size_t>(B));
    for (int64_t i = 0; i < B; ++i) order[static_cast<std::size_t>(i)] = i;
    if (!cfg.noise.shuffle_within_batch.is_off()) {  // row r of the batch is loader row order[r]
        order = within_batch_permutation(B, cfg.noise.shuffle_within_batch.seed,
                                         static_cast<uint64_t>(e), b);
    }
    const SplitPlan plan = split_plan(B, ranks.rank(), ranks.size(), cfg.micro_batch);
    split.begin_step(B * model.rows_per_sample());  // the loss's rows: a token's, for gpt
    // The step's one grad.allreduce call (its permuted key), taken before the backward that may
    // start the exchange.
    const kernels::common::AccumSpec grad_spec = accum_spec_for_call(ReduceSite::kGradAllreduce);
    for (std::size_t j = 0; j < plan.rows.size(); ++j) {
        std::vector<int64_t> rows;
        for (int64_t r : plan.rows[j]) rows.push_back(order[static_cast<std::size_t>(r)]);
        const Batch part = loader.batch(static_cast<uint64_t>(e), b, rows);
        trace_batch(part);
        split.begin_micro(plan.concurrent[j]);
        const ScopedBatchSplit active(split);
        ForwardContext ctx;
        ctx.training = true;
        ctx.epoch = static_cast<uint64_t>(e);
        ctx.dropout_seed = cfg.dropout_seed();
        ctx.sample_ids = part.sample_ids;  // dropout is keyed by sample, not by row
        // The part is prepared on the host (as the CPU run's) and uploaded (the labels by the
        // loss, after checking them on the host).
        const Device dev = model.device();
        const Tensor loss =
            softmax_cross_entropy(model.forward(part.images.to(dev), ctx), part.labels);
        // The last micro-batch's backward finishes each parameter's gradient: with overlap it
        // goes to the other processes from there (in buckets, in a fixed order).
        std::optional<autograd::LeafFinalHook> final_hook;
        if (j + 1 == plan.rows.size() && split.overlapping()) {
            split.begin_exchange(grad_spec);
            final_hook.emplace([&split](const Tensor& leaf) { split.tensor_final(leaf); });
        }
        backward_checked(loss, model, cfg.lr, e, b, loader.num_batches());
    }
    images = B;
    return split.finish(grad_spec);
}

}  // namespace dt
