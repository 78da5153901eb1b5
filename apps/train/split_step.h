// SPDX-License-Identifier: MIT
// The training step of a split batch (issue 21): the processes of `mpirun -np P detrain train`
// and --micro-batch M. The global batch stays the one of a single-process run; process r of P
// takes rows [floor(r B / P), floor((r + 1) B / P)) of it (after --shuffle-within-batch), reading
// and augmenting only those (BatchLoader::batch with rows), and cuts them into k consecutive
// micro-batches, k = ceil(ceil(B / P) / M) (1 without --micro-batch), micro-batch j holding rows
// [floor(j s / k), floor((j + 1) s / k)) of its s rows. Every process runs k micro-steps in lock
// step (batch-norm sync), each forward and backward under the run's BatchSplit
// (engine/runtime/batch_split.h), which then completes gradients and loss as the whole batch's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/runtime/allreduce_plan.h"
#include "apps/train/train_config.h"
#include "datasets/loader.h"
#include "engine/runtime/batch_split.h"
#include "models/model.h"

namespace dt {

/// The rows (of the permuted batch) process `rank` of `P` runs in each micro-step of a batch of
/// B rows, and the samples of each micro-step over all processes.
struct SplitPlan {
    std::vector<std::vector<int64_t>> rows;  // rows[j]: micro-step j's rows, in order
    std::vector<int64_t> concurrent;         // concurrent[j]: micro-step j over every process
};

/// Micro-steps per batch of B rows (the header's k); micro_batch 0: no micro-batches.
int64_t micro_steps(int64_t B, int P, int64_t micro_batch);
/// The plan of the header. Throws ValueError when some part would be empty (fewer rows than
/// processes x micro-steps can share), naming the batch and a remedy.
SplitPlan split_plan(int64_t B, int rank, int P, int64_t micro_batch);
/// Checks split_plan for every batch size the loader makes (the full and the last batch) before
/// training starts.
void check_split(const BatchLoader& loader, int P, int64_t micro_batch);
/// What combining the parts guarantees (allreduce_plan.h) for a run of P processes: its batch
/// sizes from the loader, micro-batches and batch-norm sync from cfg, leaves from the model.
AllreducePlan allreduce_plan_of(const TrainConfig& cfg, const BatchLoader& loader,
                                const Model& model, int P);

/// Whether --overlap `mode` (auto | on | off) sends gradients during the backward. auto: on
/// where the communication thread has a core of its own, i.e. on a GPU run, or where `threads`
/// leaves one of this process's cores free: the fewer of the cores it may run on and its share
/// of the host's cores (host_cores / host_processes). On busy cores the thread's waits and sums
/// slow the backward down more than overlap saves.
bool overlap_on(const std::string& mode, bool on_gpu, int threads, int process_cores,
                int host_cores, int host_processes);

/// One step on batch b of epoch e as this process's share: loads its rows, runs every
/// micro-batch's forward (training mode) and backward (backward_checked) and completes the
/// gradients (split.finish with the site grad.allreduce). Returns the whole batch's loss and
/// sets `images` to the whole batch's size. The optimizer's zero_grad is the caller's.
float split_step(BatchSplit& split, const TrainConfig& cfg, const BatchLoader& loader, Model& model,
                 int e, int64_t b, int64_t& images);

}  // namespace dt
