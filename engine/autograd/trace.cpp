// SPDX-License-Identifier: MIT
// The hash trail (contract in trace.h).
#include "engine/autograd/trace.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/nan_bits.h"

namespace dt::autograd {

namespace {

thread_local TraceSink* t_current = nullptr;

constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ull, kMul2 = 0xc2b2ae3d27d4eb4full;
constexpr std::size_t kChunkBytes = std::size_t{1} << 18;  // 2^16 float32 elements

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t mix(uint64_t h) {  // final avalanche (murmur3's fmix64)
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/// One chunk: four independent lanes over 8-byte words (so the loop pipelines), then the tail.
uint64_t hash_chunk(const unsigned char* p, std::size_t n, uint64_t seed) {
    uint64_t lane[4] = {seed, seed ^ kMul1, seed ^ kMul2, seed + kMul1};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int j = 0; j < 4; ++j) {
            uint64_t w;
            std::memcpy(&w, p + i + 8 * j, 8);
            lane[j] = rotl(lane[j] ^ (w * kMul2), 31) * kMul1;
        }
    }
    uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
    for (; i < n; ++i) h = (h ^ p[i]) * kMul1;
    return mix(h ^ n);
}

}  // namespace

uint64_t hash_bits(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    const std::size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
    std::vector<uint64_t> h(chunks);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t lo = c * kChunkBytes;
        h[c] = hash_chunk(p + lo, std::min(kChunkBytes, bytes - lo), c);
    }
    uint64_t out = mix(bytes);  // ORDER: chunk hashes folded in chunk order
    for (uint64_t v : h) out = mix(out ^ v) * kMul1 + 1;
    return out;
}

namespace {

/// A host tensor's bytes, through the typed accessor of its dtype.
const unsigned char* host_bytes(const Tensor& t) {
    switch (t.dtype()) {
        case DType::kF32:
            return reinterpret_cast<const unsigned char*>(t.data<float>());
        case DType::kI64:
            return reinterpret_cast<const unsigned char*>(t.data<int64_t>());
        case DType::kI32:
            return reinterpret_cast<const unsigned char*>(t.data<int32_t>());
        case DType::kU8:
            return t.data<uint8_t>();
    }
    return nullptr;
}

/// The bytes hashes read: host_bytes, with every NaN of a float32 tensor read as one value
/// (engine/core/nan_bits.h: a NaN's payload depends on the hardware that made it).
const unsigned char* hashed_bytes(const Tensor& t, std::vector<uint32_t>& scratch) {
    if (t.dtype() != DType::kF32) return host_bytes(t);
    return static_cast<const unsigned char*>(
        canonical_float_bytes(t.data<float>(), static_cast<std::size_t>(t.numel()), scratch));
}
const unsigned char* hashed_bytes(const Tensor& t) {
    thread_local std::vector<uint32_t> scratch;
    return hashed_bytes(t, scratch);
}

}  // namespace

uint64_t hash_tensor(const Tensor& t) {
    if (t.device() != Device::kCpu) return hash_tensor(t.to(Device::kCpu));
    return hash_bits(hashed_bytes(t), t.nbytes());
}

void TraceSink::name_tensors(std::unordered_map<const TensorImpl*, std::string> names) {
    names_ = std::move(names);
}

const std::string* TraceSink::name_of(const Tensor& t) const {
    const auto it = names_.find(t.impl_ptr().get());
    return it == names_.end() ? nullptr : &it->second;
}

void TraceSink::set_step(int64_t step) { step_ = step, next_index_ = 0; }

void TraceSink::add(const char* phase, const std::string& op, const std::string& tensor,
                    const Tensor& t) {
    TraceEntry e;
    e.step = step_, e.index = next_index_++;
    e.phase = phase, e.op = op, e.tensor = tensor, e.shape = t.shape();
    // A device tensor is copied to the host once; its hash and row hashes are those of the copy.
    const Tensor host = t.to(Device::kCpu);  // t itself on the cpu
    e.hash = hash_tensor(host);
    if (row_hashes_ && host.ndim() >= 2 && host.dim(0) > 0) {
        const std::size_t row = host.nbytes() / static_cast<std::size_t>(host.dim(0));
        std::vector<uint32_t> scratch;
        const unsigned char* p = hashed_bytes(host, scratch);
        for (int64_t r = 0; r < host.dim(0); ++r)
            e.row_hashes.push_back(hash_bits(p + static_cast<std::size_t>(r) * row, row));
    }
    if (e.step == keep_step_ && e.index == keep_index_ && host.dtype() == DType::kF32)
        kept_ = host.to_vector();
    if (on_entry_) on_entry_(e);
    if (store_) entries_.push_back(std::move(e));
}

void TraceSink::keep_values(int64_t step, int64_t index) {
    keep_step_ = step, keep_index_ = index;
    kept_.clear();
}

void TraceSink::on_entry(std::function<void(const TraceEntry&)> fn, bool store) {
    on_entry_ = std::move(fn);
    store_ = store;
}

TraceSink* current_trace() { return t_current; }

ScopedTrace::ScopedTrace(TraceSink& sink) : previous_(t_current) { t_current = &sink; }
ScopedTrace::~ScopedTrace() { t_current = previous_; }

}  // namespace dt::autograd
