// SPDX-License-Identifier: MIT
// The checksums of engine/runtime/message_check.h. The word sums run over the table of weights
// in runs of at most 1024 contiguous words, 32-bit by 32-bit products into 64-bit sums, so that
// they vectorise; compiled for AVX-512, AVX2 and the baseline, picked at load time (integer
// arithmetic: the same value on every path).
#include "engine/runtime/message_check.h"

#include <algorithm>
#include <cstring>

// ThreadSanitizer instruments the load-time resolver of target_clones, which runs before its
// runtime is up (a crash at load): sanitized builds take the baseline path only.
#if defined(__SANITIZE_THREAD__)
#define DT_CHECK_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DT_CHECK_CLONES
#endif
#endif
#ifndef DT_CHECK_CLONES
#define DT_CHECK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

namespace dt {

namespace {

const uint32_t* weights() {
    static const auto table = [] {
        struct T {
            uint32_t w[1024];
        } t{};
        for (int64_t i = 0; i < 1024; ++i) t.w[i] = static_cast<uint32_t>(check_weight(i));
        return t;
    }();
    return table.w;
}

/// Over the words of v: with `two`, int64 words as two 32-bit halves (little-endian), the sums of
/// w * low half and of w * high half; else floats, one 32-bit word each, the sum of w * word.
DT_CHECK_CLONES void weighted_halves(
    const uint32_t* v, int64_t n, int64_t first, bool two, uint64_t* lo_sum, uint64_t* hi_sum) {
    const uint32_t* w = weights();
    uint64_t lo = 0, hi = 0;
    for (int64_t k = 0; k < n;) {
        const int64_t j0 = (first + k) & 1023, len = std::min<int64_t>(n - k, 1024 - j0);
        if (two) {
            for (int64_t j = 0; j < len; ++j) {
                lo += uint64_t{w[j0 + j]} * v[2 * (k + j)];
                hi += uint64_t{w[j0 + j]} * v[2 * (k + j) + 1];
            }
        } else {
            for (int64_t j = 0; j < len; ++j) lo += uint64_t{w[j0 + j]} * v[k + j];
        }
        k += len;
    }
    *lo_sum = lo, *hi_sum = hi;
}

DT_CHECK_CLONES void pair_sum_run(
    const float* a, const float* b, float* dst, int64_t n, int64_t j0, uint64_t* sums) {
    const uint32_t* w = weights() + j0;
    uint64_t sa = 0, sb = 0, sd = 0;
    for (int64_t j = 0; j < n; ++j) {
        uint32_t ua, ub, ud;
        std::memcpy(&ua, a + j, sizeof ua);
        std::memcpy(&ub, b + j, sizeof ub);
        const float d = a[j] + b[j];  // ORDER: left + right, as combine_tree_rows_checked
        std::memcpy(&ud, &d, sizeof ud);
        dst[j] = d;
        sa += uint64_t{w[j]} * ua, sb += uint64_t{w[j]} * ub, sd += uint64_t{w[j]} * ud;
    }
    sums[0] += sa, sums[1] += sb, sums[2] += sd;
}

}  // namespace

void pair_sum_checked(const float* a, const float* b, float* dst, int64_t n, int64_t first,
                      uint64_t* ca, uint64_t* cb, uint64_t* cdst) {
    uint64_t sums[3] = {0, 0, 0};
    for (int64_t k = 0; k < n;) {  // runs that stay inside the table of weights
        const int64_t j0 = (first + k) & 1023, len = std::min<int64_t>(n - k, 1024 - j0);
        pair_sum_run(a + k, b + k, dst + k, len, j0, sums);
        k += len;
    }
    *ca = sums[0], *cb = sums[1];
    if (cdst != nullptr) *cdst = sums[2];
}

uint64_t word_check(const int64_t* v, int64_t n, int64_t first) {
    uint64_t lo, hi;  // w * v mod 2^64 = w * lo(v) + (w * hi(v)) 2^32
    weighted_halves(reinterpret_cast<const uint32_t*>(v), n, first, true, &lo, &hi);
    return lo + (hi << 32);
}

uint64_t word_check(const float* v, int64_t n, int64_t first) {
    uint64_t lo, hi;
    weighted_halves(reinterpret_cast<const uint32_t*>(v), n, first, false, &lo, &hi);
    return lo;
}

}  // namespace dt
