// SPDX-License-Identifier: MIT
// BatchSplit (contract in batch_split.h): the parts of a step's batch and how they are completed.
#include "engine/runtime/batch_split.h"

#include <algorithm>

#include "engine/core/backend.h"
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

const c::ExactAcc* acc_data(const Tensor& accs) {
    return reinterpret_cast<const c::ExactAcc*>(accs.data<int64_t>());
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

BatchSplit::BatchSplit(std::vector<Tensor> params, Collective& ranks, bool sync_batchnorm)
    : params_(std::move(params)), ranks_(ranks), sync_batchnorm_(sync_batchnorm) {
    for (std::size_t i = 0; i < params_.size(); ++i) index_[params_[i].impl_ptr().get()] = i;
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

float BatchSplit::finish(const c::AccumSpec& grad_spec) {
    const int P = ranks_.size();
    const bool exchange_accs = P > 1 && grad_spec.mode == c::AccumMode::kExact;
    // Parameters whose exact sums were kept (on their device): exchanged unrounded through the
    // host, or rounded where they are to this process's share and combined with the float
    // gradients below.
    std::vector<c::ExactAcc>& ex = exchange_;  // kept across steps (no fresh pages each step)
    ex.clear();
    const auto slot_used = [this](std::size_t i, std::size_t u) {
        return static_cast<bool>(acc_used_[i * kExactUses + u]);
    };
    const auto any_used = [&](std::size_t i) { return slot_used(i, 0) || slot_used(i, 1); };
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!any_used(i)) continue;
        DT_CHECK_VALUE(!params_[i].grad().defined(), "a split batch: trainable tensor ", i, " ",
                       params_[i].str(),
                       " gets exact sums at one reduction site and a rounded gradient at another "
                       "(hint: give the sites that reach it the same mode, e.g. --impl exact)");
        for (std::size_t u = 0; u < kExactUses; ++u) {
            if (!exchange_accs || !slot_used(i, u)) continue;
            const Tensor host = accs_[i * kExactUses + u].to(Device::kCpu);  // (cpu: itself)
            ex.insert(ex.end(), acc_data(host), acc_data(host) + params_[i].numel());
        }
    }
    std::vector<float>& rounded = rounded_;  // the exchanged sums, rounded once
    rounded.resize(ex.size());
    if (exchange_accs && !ex.empty()) {
        bytes_sent_ += ranks_.allreduce_exact_rounded(ex.data(), static_cast<int64_t>(ex.size()),
                                                      rounded.data());
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor g;
        for (std::size_t u = 0; u < kExactUses; ++u) {
            if (!slot_used(i, u)) continue;
            Tensor r;
            if (!exchange_accs) {  // one rounding each, on the accumulators' device
                r = round_exact(accs_[i * kExactUses + u], params_[i].shape());
            } else {
                Tensor h = Tensor::empty(params_[i].shape());
                const auto first = rounded.begin() + static_cast<std::ptrdiff_t>(at);
                std::copy(first, first + h.numel(), h.f32());
                at += static_cast<std::size_t>(h.numel());
                r = h.to(params_[i].device());
            }
            // ORDER: a tensor with two uses (a tied table) gets layer's + table's, one add per
            // element, as the whole batch's tape adds the two rounded gradients.
            if (g.defined()) {
                Tensor sum = Tensor::empty(g.shape(), DType::kF32, g.device());
                device_kernels(g.device()).add_forward(g.f32(), r.f32(), sum.f32(), g.numel());
                r = sum;
            }
            g = r;
        }
        if (g.defined()) params_[i].set_grad(g);
    }
    // Float gradients (and rounded shares) over the processes, in one collective.
    if (P > 1) {
        std::vector<float> buf;
        for (std::size_t i = 0; i < params_.size(); ++i) {
            if (exchange_accs && any_used(i)) continue;
            const Tensor g = params_[i].grad();
            if (!g.defined()) continue;
            const Tensor h = g.to(Device::kCpu);  // (on the cpu: g itself)
            buf.insert(buf.end(), h.f32(), h.f32() + h.numel());
        }
        if (!buf.empty()) {
            ranks_.allreduce(buf.data(), static_cast<int64_t>(buf.size()), grad_spec);
            bytes_sent_ += 4 * static_cast<int64_t>(buf.size());
        }
        std::size_t pos = 0;
        for (std::size_t i = 0; i < params_.size(); ++i) {
            if (exchange_accs && any_used(i)) continue;
            Tensor g = params_[i].grad();
            if (!g.defined()) continue;
            const auto first = buf.begin() + static_cast<std::ptrdiff_t>(pos);
            if (g.device() == Device::kCpu)
                std::copy(first, first + g.numel(), g.f32());
            else  // through a host tensor
                g.copy_from(
                    Tensor::from_vector(g.shape(), std::vector<float>(first, first + g.numel())));
            pos += static_cast<std::size_t>(g.numel());
        }
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
