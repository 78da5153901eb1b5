// SPDX-License-Identifier: MIT
// A training step's batch split into parts whose gradient, loss and batch-norm statistics must be
// those of the whole batch (issue 21): the processes of a data-parallel run (rank parts, run at
// the same time) and micro-batches (run one after another on a process, --micro-batch).
//
// The trainer keeps one BatchSplit for the run, calls begin_step per step and, for each
// micro-batch, begin_micro and the forward and backward under a ScopedBatchSplit. Ops consult
// current_batch_split():
//   softmax_cross_entropy  dlogits divide by the whole batch's size; the part's loss total goes
//                          to add_loss (the loss site's mode: exact keeps an unrounded sum)
//   batchnorm2d            with batch-norm sync and more than one process, the statistics and
//                          the backward's totals are those of the current micro-step over every
//                          process (batchnorm_parts: completed through the collective in the
//                          bn.stats / bn.backward mode; exact sums stay exact)
//   backward at an exact site (conv.wgrad, linear.wgrad, bias.grad, bn.backward, embed.grad,
//                          ln.grad): exact_grad(param) gives the parameter's unrounded
//                          accumulators, the kernel adds its part's sums there and no float
//                          gradient is made
// finish() then ends the step identically on every process:
//   parameters with accumulators: grad.allreduce exact -> the accumulators of every process
//     added and rounded ONCE (allreduce_exact_rounded); other modes -> rounded here, then as below
//   other parameters: their .grad (micro-batches added in order by the tape, acc = acc + g)
//     combined over the processes by the grad.allreduce mode (Collective::allreduce)
//   both through GradBuckets (grad_buckets.h): with overlap, each parameter's share leaves as
//     soon as the last micro-batch's backward has finished it (begin_exchange, tensor_final),
//     and finish() waits for the rest; the bits are those of one exchange after the backward
//   loss: exact -> accumulators added over micro-batches and processes, rounded once; else
//     ORDER: +0 + total(micro 0) + total(micro 1) + ... per process, then the loss site's
//     combination over the processes; divided by the whole batch's size.
// Hence with exact at every cross-sample site (and grad.allreduce), the gradients, loss and
// batch-norm statistics are the bits of the unsplit batch for any number of processes and any
// micro-batching, except that batch-norm statistics are per micro-step: with micro-batches they
// are those of the micro-step's samples (over every process), as in any framework's gradient
// accumulation.
// Any device: the accumulators live on the parameters' device (the kernels add to them there).
// In one process finish() rounds them there (round_exact, engine/runtime/exact_round.h); with
// several it exchanges them, the float gradients and the loss through the host (the collective
// is host MPI) and puts the gradients back on the parameters' device.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/runtime/collective.h"
#include "engine/runtime/grad_buckets.h"
#include "kernels/batchnorm2d.h"
#include "kernels/common/accum_exact.h"

namespace dt {

/// Which use of a trainable tensor an exact site's sums are for. A tensor used twice in a step
/// (GPT's tied table: the head's linear.wgrad and the embedding's embed.grad) keeps one set of
/// accumulators per use, rounded apart and then added, as the whole batch's tape adds its two
/// rounded gradients: the split batch keeps the whole batch's bits.
enum class ExactUse { kLayer = 0, kTable = 1 };
constexpr std::size_t kExactUses = 2;

class BatchSplit {
 public:
    /// `params`: the trainable tensors (their .grad is completed by finish), on any device.
    /// `ranks`: the processes that split each batch with this one; `sync_batchnorm`: batch-norm
    /// statistics over every process's part (else each process normalises its own part).
    /// `overlap_bucket` > 0: with more than one process, the gradients travel in buckets of
    /// that many elements while the last micro-batch's backward runs (grad_buckets.h; the bits
    /// do not depend on it); 0: all at once in finish(). A collective call when it is > 0.
    BatchSplit(std::vector<Tensor> params, Collective& ranks, bool sync_batchnorm,
               int64_t overlap_bucket = 0);
    BatchSplit(const BatchSplit&) = delete;
    BatchSplit& operator=(const BatchSplit&) = delete;

    /// A new step of `whole` samples in all (every process, every micro-batch).
    void begin_step(int64_t whole);
    /// The next micro-batch: `concurrent` samples in it over every process (batch-norm's N).
    void begin_micro(int64_t concurrent);

    int64_t whole() const { return whole_; }
    /// The unrounded accumulators (param.numel() of them, zero at begin_step) for the gradient
    /// of `param` when `spec` is exact and param is one of the trainable tensors; else null.
    kernels::common::ExactAcc* exact_grad(const Tensor& param,
                                          const kernels::common::AccumSpec& spec,
                                          ExactUse use = ExactUse::kLayer);
    /// The batch-norm hook of the current micro-step, or null (one process, or sync off).
    const kernels::BatchNormParts* batchnorm_parts() const;
    /// A part's loss: its total over its samples in the loss site's mode `spec` (undivided) and,
    /// for exact, the per-sample losses (host) whose exact sum it is.
    void add_loss(float total, const float* loss_rows, int64_t n,
                  const kernels::common::AccumSpec& spec);

    /// Whether gradients travel during the backward (overlap_bucket > 0, several processes).
    bool overlapping() const { return buckets_ && buckets_->overlapping(); }
    /// The buckets the gradients travel in (0 with one process).
    std::size_t buckets() const { return buckets_ ? buckets_->buckets() : 0; }
    /// The exchange of this step's gradients may begin, in mode `grad_spec` (finish() must get
    /// the same): call before the last micro-batch's backward. From then on tensor_final hands
    /// each trainable tensor over as soon as that backward has finished it.
    void begin_exchange(const kernels::common::AccumSpec& grad_spec);
    /// `t`'s gradient (or exact sums) for this step is final (autograd::LeafFinalHook). Tensors
    /// that are not trainable, or named before begin_exchange, are ignored.
    void tensor_final(const Tensor& t);

    /// Completes every parameter's .grad as the whole batch's (see the file comment), the
    /// processes' shares combined as `grad_spec` (site grad.allreduce) says, and returns the
    /// whole batch's loss. Every process must call it once per step.
    float finish(const kernels::common::AccumSpec& grad_spec);

    /// Bytes this process has handed to collectives so far (gradients, loss, batch-norm totals):
    /// 4 per float, 44 per exact accumulator (packed, exact_pack.h), 48 per exactly exchanged
    /// gradient element (its packed accumulator, then its rounded float). What it receives
    /// depends on the mode (engine/runtime/collective.h) and MPI's algorithms.
    int64_t bytes_sent() const { return bytes_sent_; }

 private:
    bool acc_used(std::size_t i, std::size_t use) const { return acc_used_[i * kExactUses + use]; }
    bool any_acc_used(std::size_t i) const { return acc_used(i, 0) || acc_used(i, 1); }
    bool exchange_accs() const;
    void check_one_kind(std::size_t i) const;
    void round_here(std::size_t i);
    GradShare share_of(std::size_t i);
    void take_exchanged(std::size_t i);

    static void bn_exact(void* ctx, kernels::common::ExactAcc* accs, int64_t n);
    static void bn_floats(void* ctx, float* totals, int64_t n,
                          const kernels::common::AccumSpec& spec);

    std::vector<Tensor> params_;
    Collective& ranks_;
    bool sync_batchnorm_;
    int64_t whole_ = 0;
    kernels::BatchNormParts bn_parts_{};
    std::unordered_map<const TensorImpl*, std::size_t> index_;  // param -> position in params_
    // Per param and use (index param * kExactUses + use): ExactAccs as int64 words on the
    // param's device, or undefined; and whether this step used them.
    std::vector<Tensor> accs_;
    std::vector<bool> acc_used_;
    std::unique_ptr<GradBuckets> buckets_;  // several processes: the gradients' exchange
    bool exchange_begun_ = false;
    kernels::common::AccumSpec grad_spec_{};
    kernels::common::ExactAcc loss_acc_{};
    bool loss_exact_ = false;
    float loss_sum_ = 0.0f;
    kernels::common::AccumSpec loss_spec_{};
    int64_t bytes_sent_ = 0;
};

/// The split of the batch now being run on this thread, or null (a whole batch).
BatchSplit* current_batch_split();

/// Makes `split` current for its lifetime (a micro-batch's forward and backward).
class ScopedBatchSplit {
 public:
    explicit ScopedBatchSplit(BatchSplit& split);
    ~ScopedBatchSplit();
    ScopedBatchSplit(const ScopedBatchSplit&) = delete;
    ScopedBatchSplit& operator=(const ScopedBatchSplit&) = delete;

 private:
    BatchSplit* previous_;
};

/// exact_grad of the current split, or null when there is none.
kernels::common::ExactAcc* split_exact_grad(const Tensor& param,
                                            const kernels::common::AccumSpec& spec,
                                            ExactUse use = ExactUse::kLayer);

}  // namespace dt
