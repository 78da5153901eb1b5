// SPDX-License-Identifier: MIT
// BatchLoader: validate once in the constructor; per batch, take the epoch's permutation (cached),
// then fill each row independently (augment the uint8 image, map bytes through the per-channel
// normalisation table). Rows are owned by one OpenMP iteration each, so any thread count gives
// the same bytes.
#include "datasets/loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "datasets/sampler.h"
#include "engine/core/error.h"

namespace dt {

struct BatchLoader::Cache {
    std::mutex mu;
    uint64_t epoch = 0;
    std::shared_ptr<const std::vector<int64_t>> perm;  // null until the first request
};

BatchLoader::BatchLoader(const Dataset& ds, LoaderConfig cfg)
    : ds_(&ds), cfg_(std::move(cfg)), cache_(std::make_shared<Cache>()) {
    const int64_t p = ds.sample_pixels();
    DT_CHECK_VALUE(ds.size >= 0 && static_cast<int64_t>(ds.pixels.size()) == ds.size * p &&
                       static_cast<int64_t>(ds.labels.size()) == ds.size,
                   ds.name, ": inconsistent data set: size ", ds.size, ", ", ds.pixels.size(),
                   " pixel bytes (expected ", ds.size * p, "), ", ds.labels.size(), " labels");
    DT_CHECK_VALUE(cfg_.batch_size >= 1, "loader for ", ds.name, ": batch_size must be >= 1, got ",
                   cfg_.batch_size);
    DT_CHECK_VALUE(cfg_.augment.crop_padding >= 0 &&
                       cfg_.augment.crop_padding <= std::max(ds.height, ds.width),
                   "loader for ", ds.name, ": crop_padding ", cfg_.augment.crop_padding,
                   " outside [0, ", std::max(ds.height, ds.width),
                   "] (hint: CIFAR recipes use 4; 0 disables cropping)");

    if (ds.context > 0) {  // text: tokens are bytes as they are
        DT_CHECK_VALUE(!cfg_.augment.enabled() && cfg_.norm.kind != NormKind::kStandardize,
                       "loader for ", ds.name,
                       ": text windows take no augmentation or standardisation (hint: "
                       "--augment none --normalize unit)");
        DT_CHECK_VALUE(ds.channels == 1 && ds.height == 1 && ds.width == ds.context + 1,
                       "loader for ", ds.name, ": text windows must be 1 x 1 x ", ds.context + 1,
                       ", got ", ds.channels, " x ", ds.height, " x ", ds.width);
    }
    // ORDER: the table holds exactly the documented formula for every byte value, so a lookup
    // equals evaluating it per pixel.
    const int C = ds.channels;
    const Normalization& nm = cfg_.norm;
    if (nm.kind == NormKind::kStandardize) {
        DT_CHECK_VALUE(
            static_cast<int>(nm.mean.size()) == C && static_cast<int>(nm.stddev.size()) == C,
            "loader for ", ds.name, ": standardisation needs ", C,
            " means and standard deviations (one per channel), got ", nm.mean.size(), " and ",
            nm.stddev.size());
        for (int c = 0; c < C; ++c) {
            const float s = nm.stddev[static_cast<std::size_t>(c)];
            DT_CHECK_VALUE(
                std::isfinite(s) && s > 0.0f && std::isfinite(nm.mean[static_cast<std::size_t>(c)]),
                "loader for ", ds.name, ": channel ", c, " has mean ",
                nm.mean[static_cast<std::size_t>(c)], " and std ", s,
                " (expected finite values and std > 0)");
        }
    }
    table_.resize(static_cast<std::size_t>(C) * 256);
    for (int c = 0; c < C; ++c) {
        for (int x = 0; x < 256; ++x) {
            float v = static_cast<float>(x) / 255.0f;
            if (nm.kind == NormKind::kStandardize) {
                v = (v - nm.mean[static_cast<std::size_t>(c)]) /
                    nm.stddev[static_cast<std::size_t>(c)];
            }
            table_[static_cast<std::size_t>(c * 256 + x)] = v;
        }
    }
}

int64_t BatchLoader::num_batches() const {
    const int64_t n = ds_->size, b = cfg_.batch_size;
    return cfg_.drop_last ? n / b : (n + b - 1) / b;
}

int64_t BatchLoader::batch_rows(int64_t index) const {
    DT_CHECK_VALUE(index >= 0 && index < num_batches(), "loader for ", ds_->name, ": batch ", index,
                   " out of range [0, ", num_batches(), ")");
    return std::min(cfg_.batch_size, ds_->size - index * cfg_.batch_size);
}

std::shared_ptr<const std::vector<int64_t>> BatchLoader::permutation(uint64_t epoch) const {
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (cache_->perm == nullptr || cache_->epoch != epoch) {
        cache_->perm = std::make_shared<const std::vector<int64_t>>(
            cfg_.shuffle ? epoch_permutation(ds_->size, cfg_.shuffle_seed, epoch)
                         : identity_permutation(ds_->size));
        cache_->epoch = epoch;
    }
    return cache_->perm;
}

Batch BatchLoader::batch(uint64_t epoch, int64_t index) const {
    std::vector<int64_t> all(static_cast<std::size_t>(batch_rows(index)));
    for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int64_t>(r);
    return batch(epoch, index, all);
}

Batch BatchLoader::batch(uint64_t epoch, int64_t index, const std::vector<int64_t>& picks) const {
    const int64_t in_batch = batch_rows(index), rows = static_cast<int64_t>(picks.size());
    for (std::size_t r = 0; r < picks.size(); ++r) {
        DT_CHECK_VALUE(picks[r] >= 0 && picks[r] < in_batch, "loader for ", ds_->name, ": row ",
                       picks[r], " at position ", r, " is outside batch ", index, " of ", in_batch,
                       " rows");
    }
    DT_CHECK_VALUE(epoch <= 0xFFFFFFFFull, "loader for ", ds_->name, ": epoch ", epoch,
                   " does not fit the 32-bit Philox sub-counter (expected < 2^32)");
    std::shared_ptr<const std::vector<int64_t>> perm = permutation(epoch);
    if (ds_->context > 0) return text_batch(*perm, index, picks);
    const int C = ds_->channels, H = ds_->height, W = ds_->width;
    const int64_t P = ds_->sample_pixels(), HW = int64_t{H} * W;

    Batch out;
    out.images = Tensor::empty({rows, C, H, W});
    out.labels = Tensor::empty({rows}, DType::kI64);
    out.sample_ids.resize(picks.size());
    for (std::size_t r = 0; r < picks.size(); ++r)
        out.sample_ids[r] = (*perm)[static_cast<std::size_t>(index * cfg_.batch_size + picks[r])];
    const bool augment = cfg_.augment.enabled();
    std::vector<uint8_t> scratch(augment ? static_cast<std::size_t>(rows * P) : 0);
    float* images = out.images.f32();
    int64_t* labels = out.labels.data<int64_t>();
    const uint8_t* pixels = ds_->pixels.data();
    const float* table = table_.data();

    // Row r is owned by one iteration: augment into scratch row r, normalise into images row r.
#pragma omp parallel for schedule(static) if (rows * P >= (1 << 16))
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t id = out.sample_ids[static_cast<std::size_t>(r)];
        const uint8_t* src = pixels + id * P;
        if (augment) {
            uint8_t* tmp = scratch.data() + r * P;
            augment_image(cfg_.augment, epoch, id, src, tmp, C, H, W);
            src = tmp;
        }
        float* dst = images + r * P;
        for (int c = 0; c < C; ++c) {
            const float* t = table + c * 256;
            for (int64_t i = 0; i < HW; ++i) dst[c * HW + i] = t[src[c * HW + i]];
        }
        labels[r] = ds_->labels[static_cast<std::size_t>(id)];
    }
    return out;
}

Batch BatchLoader::text_batch(const std::vector<int64_t>& perm, int64_t index,
                              const std::vector<int64_t>& picks) const {
    const auto rows = static_cast<int64_t>(picks.size());
    const int64_t T = ds_->context;
    Batch out;
    out.images = Tensor::empty({rows, T}, DType::kI64);
    out.labels = Tensor::empty({rows * T}, DType::kI64);
    out.sample_ids.resize(picks.size());
    int64_t* tokens = out.images.data<int64_t>();
    int64_t* targets = out.labels.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t id = perm[static_cast<std::size_t>(index * cfg_.batch_size +
                                                         picks[static_cast<std::size_t>(r)])];
        out.sample_ids[static_cast<std::size_t>(r)] = id;
        const uint8_t* w = ds_->pixels.data() + id * (T + 1);  // window id: tokens, then one more
        for (int64_t t = 0; t < T; ++t) {
            tokens[r * T + t] = w[t];
            targets[r * T + t] = w[t + 1];
        }
    }
    return out;
}

namespace {

// Row `from` of src's n rows (of numel / n elements each) to row `to` of dst.
template <typename T>
void copy_row(const Tensor& src, Tensor& dst, int64_t n, int64_t from, int64_t to) {
    const int64_t len = src.numel() / n;
    const T* s = src.data<T>() + from * len;
    std::copy(s, s + len, dst.data<T>() + to * len);
}

}  // namespace

Batch permute_rows(const Batch& b, const std::vector<int64_t>& perm) {
    const int64_t n = b.size();
    DT_CHECK_VALUE(static_cast<int64_t>(perm.size()) == n, "permute_rows: ", perm.size(),
                   " indices for a batch of ", n, " rows (expected one index per row)");
    // Images (float32 pixels or int64 tokens) and labels (one, or a target per token) move
    // with their row.
    Batch out;
    out.images = Tensor::empty(b.images.shape(), b.images.dtype());
    out.labels = Tensor::empty(b.labels.shape(), DType::kI64);
    out.sample_ids.resize(static_cast<std::size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        const int64_t from = perm[static_cast<std::size_t>(r)];
        DT_CHECK_VALUE(from >= 0 && from < n, "permute_rows: index ", from, " at position ", r,
                       " is outside the batch's rows [0, ", n, ")");
        if (b.images.dtype() == DType::kI64)
            copy_row<int64_t>(b.images, out.images, n, from, r);
        else
            copy_row<float>(b.images, out.images, n, from, r);
        copy_row<int64_t>(b.labels, out.labels, n, from, r);
        out.sample_ids[static_cast<std::size_t>(r)] = b.sample_ids[static_cast<std::size_t>(from)];
    }
    return out;
}

LoaderConfig eval_loader_config(int64_t batch_size, Normalization norm) {
    LoaderConfig cfg;
    cfg.batch_size = batch_size;
    cfg.shuffle = false;
    cfg.augment = AugmentConfig{};
    cfg.norm = std::move(norm);
    cfg.drop_last = false;
    return cfg;
}

std::vector<Batch> eval_batches(const Dataset& ds, int64_t batch_size, Normalization norm) {
    BatchLoader loader(ds, eval_loader_config(batch_size, std::move(norm)));
    std::vector<Batch> out;
    out.reserve(static_cast<std::size_t>(loader.num_batches()));
    for (int64_t b = 0; b < loader.num_batches(); ++b) out.push_back(loader.batch(0, b));
    return out;
}

}  // namespace dt
