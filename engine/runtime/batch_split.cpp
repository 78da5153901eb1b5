// SPDX-License-Identifier: MIT
// BatchSplit (contract in batch_split.h): the parts of a step's batch and how they are completed.
#include "engine/runtime/batch_split.h"

#include <algorithm>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/runtime/exact_pack.h"
#include "engine/runtime/exact_round.h"

namespace dt {

namespace c = kernels::common;

namespace {

thread_local BatchSplit* t_current = nullptr;

// What a process contributes per element (bytes_sent): a packed accumulator (exact_pack.h) to
// an all-reduce; the gradients' exchange reports its own (allreduce_exact_rounded).
constexpr int64_t kAccBytes = sizeof(PackedExactAcc);

// The accumulators of a parameter live in an int64 tensor on its device, kExactAccWords
// elements each (exact_round.h): all-zero bytes are exact_init's state, and the struct has no
// padding inside the limbs, so the bytes move between devices as they are.
Tensor zero_accs(int64_t n, Device device) {
    return Tensor::zeros({n * kExactAccWords}, DType::kI64, device);
}

}  // namespace

// The batch-norm hook (kernels/batchnorm2d.h): ctx is the split.
void BatchSplit::bn_exact(void* ctx, c::ExactAcc* accs, int64_t n) {
    auto* s = static_cast<BatchSplit*>(ctx);
    s->bytes_sent_ += kAccBytes * n;
    s->ranks_.allreduce_exact(accs, n);
}
void BatchSplit::bn_floats(void* ctx, float* totals, int64_t n, const c::AccumSpec& spec) {
    auto* s = static_cast<BatchSplit*>(ctx);
    s->bytes_sent_ += 4 * n;
    s->ranks_.allreduce(totals, n, spec);
}

BatchSplit::BatchSplit(std::vector<Tensor> params, Collective& ranks, bool sync_batchnorm,
                       int64_t overlap_bucket)
    : params_(std::move(params)), ranks_(ranks), sync_batchnorm_(sync_batchnorm) {
    for (std::size_t i = 0; i < params_.size(); ++i) index_[params_[i].impl_ptr().get()] = i;
    if (ranks_.size() > 1) {
        std::vector<int64_t> numel;
        for (const Tensor& p : params_) numel.push_back(p.numel());
        buckets_ = std::make_unique<GradBuckets>(numel, ranks_, overlap_bucket);
    }
    accs_.resize(params_.size() * kExactUses);
    acc_used_.assign(params_.size() * kExactUses, false);
    bn_parts_.ctx = this;
    bn_parts_.exact = bn_exact;
    bn_parts_.floats = bn_floats;
}

void BatchSplit::begin_step(int64_t whole) {
    DT_CHECK_VALUE(whole > 0, "BatchSplit: a step of ", whole, " samples");
    whole_ = whole;
    for (std::size_t i = 0; i < accs_.size(); ++i) {
        if (acc_used_[i])
            accs_[i] = zero_accs(params_[i / kExactUses].numel(), params_[i / kExactUses].device());
        acc_used_[i] = false;
    }
    c::exact_init(loss_acc_);
    loss_exact_ = false;
    loss_sum_ = 0.0f;
}

void BatchSplit::begin_micro(int64_t concurrent) { bn_parts_.n_total = concurrent; }

c::ExactAcc* BatchSplit::exact_grad(const Tensor& param, const c::AccumSpec& spec, ExactUse use) {
    if (spec.mode != c::AccumMode::kExact) return nullptr;
    const auto it = index_.find(param.impl_ptr().get());
    if (it == index_.end()) return nullptr;
    const std::size_t i = it->second * kExactUses + static_cast<std::size_t>(use);
    if (!accs_[i].defined()) accs_[i] = zero_accs(param.numel(), param.device());
    acc_used_[i] = true;
    return reinterpret_cast<c::ExactAcc*>(accs_[i].data<int64_t>());
}

const kernels::BatchNormParts* BatchSplit::batchnorm_parts() const {
    return sync_batchnorm_ && ranks_.size() > 1 ? &bn_parts_ : nullptr;
}

void BatchSplit::add_loss(float total, const float* loss_rows, int64_t n,
                          const c::AccumSpec& spec) {
    loss_spec_ = spec;
    if (spec.mode == c::AccumMode::kExact) {
        loss_exact_ = true;
        for (int64_t i = 0; i < n; ++i) c::exact_add(loss_acc_, loss_rows[i]);  // ORDER: none
        return;
    }
    loss_sum_ = loss_sum_ + total;  // ORDER: micro-batches in order, from +0
}

bool BatchSplit::exchange_accs() const { return grad_spec_.mode == c::AccumMode::kExact; }

// A tensor with exact sums must have no float gradient as well.
void BatchSplit::check_one_kind(std::size_t i) const {
    DT_CHECK_VALUE(!params_[i].grad().defined(), "a split batch: trainable tensor ", i, " ",
                   params_[i].str(),
                   " gets exact sums at one reduction site and a rounded gradient at another "
                   "(hint: give the sites that reach it the same mode, e.g. --impl exact)");
}

// Tensor i's exact sums rounded on their device, one rounding per use, as its .grad.
void BatchSplit::round_here(std::size_t i) {
    if (!any_acc_used(i)) return;
    check_one_kind(i);
    Tensor g;
    for (std::size_t u = 0; u < kExactUses; ++u) {
        if (!acc_used(i, u)) continue;
        const Tensor r = round_exact(accs_[i * kExactUses + u], params_[i].shape());
        // ORDER: a tensor with two uses (a tied table) gets layer's + table's by the tape's
        // own rule (autograd::accumulate), as the whole batch's tape adds the two gradients.
        g = g.defined() ? autograd::accumulate(g, r) : r;
    }
    params_[i].set_grad(g);
}

// Tensor i's part of the exchange, on the host: its exact sums unrounded when grad.allreduce
// is exact, else its float gradient (exact sums rounded here first).
GradShare BatchSplit::share_of(std::size_t i) {
    GradShare share;
    if (exchange_accs() && any_acc_used(i)) {
        check_one_kind(i);
        share.accs.resize(kExactUses);
        for (std::size_t u = 0; u < kExactUses; ++u)
            if (acc_used(i, u)) share.accs[u] = accs_[i * kExactUses + u].to(Device::kCpu);
        return share;
    }
    round_here(i);
    const Tensor g = params_[i].grad();
    if (g.defined()) share.floats = g.to(Device::kCpu);  // (on the cpu: g itself)
    return share;
}

// Tensor i's .grad from the exchange's results.
void BatchSplit::take_exchanged(std::size_t i) {
    if (exchange_accs() && any_acc_used(i)) {
        Tensor g;
        for (std::size_t u = 0; u < kExactUses; ++u) {
            const float* sums = buckets_->rounded(i, u);
            if (sums == nullptr) continue;
            Tensor h = Tensor::empty(params_[i].shape());
            std::copy(sums, sums + h.numel(), h.f32());
            const Tensor r = h.to(params_[i].device());
            g = g.defined() ? autograd::accumulate(g, r) : r;  // ORDER: as round_here
        }
        params_[i].set_grad(g);
        return;
    }
    const float* sums = buckets_->floats(i);
    if (sums == nullptr) return;
    Tensor g = params_[i].grad();
    if (g.device() == Device::kCpu)
        std::copy(sums, sums + g.numel(), g.f32());
    else  // through a host tensor
        g.copy_from(Tensor::from_vector(g.shape(), std::vector<float>(sums, sums + g.numel())));
}

void BatchSplit::begin_exchange(const c::AccumSpec& grad_spec) {
    grad_spec_ = grad_spec;
    exchange_begun_ = true;
    if (buckets_) buckets_->begin(grad_spec);
}

void BatchSplit::tensor_final(const Tensor& t) {
    if (!exchange_begun_ || !buckets_) return;
    const auto it = index_.find(t.impl_ptr().get());
    if (it == index_.end() || buckets_->added(it->second)) return;
    buckets_->add(it->second, share_of(it->second));
}

float BatchSplit::finish(const c::AccumSpec& grad_spec) {
    if (!exchange_begun_) begin_exchange(grad_spec);
    DT_CHECK(grad_spec.mode == grad_spec_.mode && grad_spec.permute_key == grad_spec_.permute_key,
             "BatchSplit::finish: the exchange began in another grad.allreduce mode");
    exchange_begun_ = false;
    const int P = ranks_.size();
    if (!buckets_) {  // one process: each tensor's exact sums rounded once, where they are
        for (std::size_t i = 0; i < params_.size(); ++i) round_here(i);
    } else {  // the tensors not yet handed over, then the whole exchange
        for (std::size_t i = 0; i < params_.size(); ++i)
            if (!buckets_->added(i)) buckets_->add(i, share_of(i));
        bytes_sent_ += buckets_->finish();
        for (std::size_t i = 0; i < params_.size(); ++i) take_exchanged(i);
    }
    // The loss of the whole batch.
    float total = 0.0f;
    if (loss_exact_) {
        if (P > 1) {
            ranks_.allreduce_exact(&loss_acc_, 1);
            bytes_sent_ += kAccBytes;
        }
        total = c::exact_value(loss_acc_);
    } else {
        total = loss_sum_;
        if (P > 1) {
            ranks_.allreduce(&total, 1, loss_spec_);
            bytes_sent_ += 4;
        }
    }
    return total / static_cast<float>(whole_);  // ORDER: total, then one division
}

BatchSplit* current_batch_split() { return t_current; }

ScopedBatchSplit::ScopedBatchSplit(BatchSplit& split) : previous_(t_current) { t_current = &split; }
ScopedBatchSplit::~ScopedBatchSplit() { t_current = previous_; }

c::ExactAcc* split_exact_grad(const Tensor& param, const c::AccumSpec& spec, ExactUse use) {
    BatchSplit* s = current_batch_split();
    return s != nullptr ? s->exact_grad(param, spec, use) : nullptr;
}

}  // namespace dt
