// SPDX-License-Identifier: MIT
// Sample chunks of the CPU conv2d (recipes in kernels/conv2d.h; declarations in
// conv2d_internal.h): on small feature maps one sample's GEMM is a thin matrix (P = 1 on a 1x1
// map: a matrix-vector product that streams the whole weight per sample), so forward, dgrad and
// the wgrad group leaf (wgrad_group_leaf, which every wgrad mode uses) put several samples side
// by side in one GEMM, positions indexed j*P + q (sample j of the chunk, position q). B panels
// are packed straight from the padded samples (runs for forward, gathers for wgrad's col^T).
// ORDER: unchanged: a forward or dgrad column is the same fma chain over the same K whichever
// columns share its GEMM, and a chunk of wgrad is the same sum continued over (sample, q)
// ascending as the per-sample GEMMs chained with `accumulate` (cpu::gemm stores and reloads
// partial sums exactly between K blocks).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/cpu/transpose_avx512.h"

namespace dt::kernels::cpu::conv2d_internal {

namespace {
/// Columns a chunked GEMM aims for (a few register-tile panels wide).
constexpr int64_t kChunkCols = 512;
/// Most K a wgrad chunk takes at once (bounds its padded-sample and dy buffers; 4096 measured
/// slower: the gathers then miss L2).
constexpr int64_t kWgradChunkK = 1024;
}  // namespace

int64_t samples_per_chunk(const Geometry& g) {
    if (g.P >= kChunkPositions) return 1;
    // At least one chunk per thread when the batch allows, so chunks run side by side.
    const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int64_t n = g.p->n, per_thread = (n + threads - 1) / threads;
    const int64_t sc = std::clamp<int64_t>(kChunkCols / std::max<int64_t>(g.P, 1), 1, per_thread);
    // A chunk count that is a multiple of the thread count shares evenly (SmallCNN's 7x7 map at
    // batch 128: 16 chunks of 8, not 13 of 10): shrink the chunk, by at most half, until it is.
    for (int64_t s = sc; threads > 1 && s >= std::max<int64_t>(1, sc / 2); --s)
        if (((n + s - 1) / s) % threads == 0) return s;
    return sc;
}

namespace {
/// Data movement big enough to split over threads (called outside a parallel region).
bool split_copy(int64_t floats) { return floats >= (int64_t{1} << 15) && !omp_in_parallel(); }
}  // namespace

void gather_dy(const float* dy, int64_t s0, int64_t sc, const Geometry& g, float* dst) {
    const int64_t co = g.p->co, P = g.P, cols = sc * P;
    parallel_for(split_copy(co * cols), co, [&](int64_t o) {
        for (int64_t j = 0; j < sc; ++j)
            copy_run(dst + o * cols + j * P, dy + ((s0 + j) * co + o) * P, P);
    });
}

namespace {
/// The chunk's padded samples (the samples themselves without padding), in the calling thread's
/// buffers; padding split over threads when `par`.
const float* const* pad_chunk(const float* x, int64_t s0, int64_t sc, const Geometry& g,
                              bool par) {
    const Conv2dParams& p = *g.p;
    const int64_t xsz = p.ci * p.h * p.w, psz = p.ci * g.hp * g.wp;
    thread_local std::vector<float> t_pad;
    thread_local std::vector<const float*> t_xp;
    t_xp.resize(static_cast<std::size_t>(sc));
    float* pad = p.pad == 0 ? nullptr : scratch(t_pad, sc * psz);
    const float** xps = t_xp.data();
    parallel_for(par, sc, [&](int64_t j) {
        const float* xs = x + (s0 + j) * xsz;
        if (pad) pad_into(xs, g, pad + j * psz);
        xps[j] = pad ? pad + j * psz : xs;
    });
    return xps;
}

struct ChunkSource {
    const float* const* xps;  // the chunk's padded samples
    const Geometry* g;
};

/// A B panel of a forward chunk, B[i, j*P + q] = xpad[sample j, live[i], q], copied from the
/// padded samples straight into the packed panel (stride 1). The panel's columns fall into
/// runs of one output row of one sample, the same for every row i: found once per panel (in
/// batches), then each row is a few short copies at its tap's offset.
struct Run {
    const float* src;  // padded sample + the output row's offset
    int64_t col, len;
};

#if defined(__x86_64__)
/// Panels of at most 16 columns (n runs, all of them): each packed row is one register, its runs
/// merged in by masked loads (lanes [col, col+len) from src - col + lane; masked lanes are not
/// read), stored once, zeros included.
__attribute__((target("avx512f"))) void pack_runs_avx512(const Run* runs, int64_t n,
                                                         const Geometry& g, int64_t k0,
                                                         int64_t kc, int64_t pw, float* dst) {
    __mmask16 mask[16];
    for (int64_t u = 0; u < n; ++u)
        mask[u] = static_cast<__mmask16>(((1u << runs[u].len) - 1) << runs[u].col);
    const auto row = static_cast<__mmask16>((1u << pw) - 1);
    for (int64_t k = 0; k < kc; ++k) {
        const int64_t rb = g.rbase[g.live[k0 + k]];
        __m512 v = _mm512_setzero_ps();
        for (int64_t u = 0; u < n; ++u)
            v = _mm512_mask_loadu_ps(v, mask[u], runs[u].src + rb - runs[u].col);
        _mm512_mask_storeu_ps(dst + k * pw, row, v);
    }
}
#endif

void pack_chunk(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
                float* dst) {
    const auto* s = static_cast<const ChunkSource*>(ctx);
    const Geometry& g = *s->g;
    const int64_t wo = g.p->wo;
    constexpr int64_t kMaxRuns = 32;  // runs found per batch (a run holds at least one column)
    for (int64_t j = j0; j < j0 + nr;) {
        Run runs[kMaxRuns];
        int64_t n = 0;
        for (; j < j0 + nr && n < kMaxRuns; ++n) {
            const int64_t sj = j / g.P, q = j % g.P, oh = q / wo, ow = q % wo;
            const int64_t len = std::min(wo - ow, j0 + nr - j);
            runs[n] = Run{s->xps[sj] + oh * g.wp + ow, j - j0, len};
            j += len;
        }
#if defined(__x86_64__)
        // The path in force (tests force each one); a panel's runs all found in one batch.
        if (cpu_isa() == CpuIsa::kAvx512 && pw <= 16 && j == j0 + nr) {
            pack_runs_avx512(runs, n, g, k0, kc, pw, dst);
            return;
        }
#endif
        for (int64_t k = 0; k < kc; ++k) {
            float* d = dst + k * pw;
            const int64_t rb = g.rbase[g.live[k0 + k]];
            for (int64_t u = 0; u < n; ++u)
                copy_run(d + runs[u].col, runs[u].src + rb, runs[u].len);
        }
    }
    for (int64_t k = 0; k < kc; ++k) std::fill(dst + k * pw + nr, dst + (k + 1) * pw, 0.0f);
}
}  // namespace

bool forward_chunk_gemm(const float* x, int64_t s0, int64_t sc, const GemmPackedA& wa,
                        const Geometry& g, float* out, bool parallel_gemm) {
    const Conv2dParams& p = *g.p;
    if (p.stride != 1) return false;  // stride 1: a tap's output row is one run of the input
    const ChunkSource src{pad_chunk(x, s0, sc, g, split_copy(g.RL * sc * g.P)), &g};
    // ORDER: out = the fma chain from +0 over r ascending of w[o,r] * xpad[r,q]
    // (gemm_f32_k_fma), for every column of the chunk; where B comes from changes no value.
    gemm(wa, GemmBSource{pack_chunk, &src}, out,
         GemmParams{.m = p.co, .n = sc * g.P, .k = g.RL, .parallel = parallel_gemm});
    return true;
}

void im2col_chunk(const float* x, int64_t s0, int64_t sc, const Geometry& g, float* dst) {
    const Conv2dParams& p = *g.p;
    const int64_t cols = sc * g.P;
    // The chunk's padded samples first, so that each col row is written in one pass.
    const bool par = split_copy(g.RL * cols);
    const float* const* xps = pad_chunk(x, s0, sc, g, par);
    const int64_t st = p.stride, wo = p.wo, ho = p.ho, wp = g.wp;
    parallel_for(par, g.RL, [&](int64_t i) {
        const int64_t rb = g.rbase[g.live[i]];
        float* d = dst + i * cols;
        for (int64_t j = 0; j < sc; ++j) {
            const float* base = xps[j] + rb;
            for (int64_t oh = 0; oh < ho; ++oh, d += wo) {
                const float* src = base + oh * st * wp;
                if (st == 1) {
                    copy_run(d, src, wo);
                } else {
                    for (int64_t ow = 0; ow < wo; ++ow) d[ow] = src[ow * st];
                }
            }
        }
    });
}

namespace {
/// The B operand of a wgrad chunk, col^T: B[k, i] = xpad[sample k / P, live[i], position k % P],
/// gathered from the padded samples straight into the packed panel (no im2col, no transposed
/// packing: those two passes cost the layer about as much as its multiply-adds did).
struct WgradSource {
    const float* const* xps;   // the chunk's padded samples
    const int32_t* roff;       // (RL) and
    const int64_t* qoff;       // (P): window_offsets of the geometry
    int64_t P;
};

#if defined(__x86_64__)
/// Runs of adjacent floats that the 16 panel rows k .. k+15 read (rows = positions): run u
/// covers lanes[u] and its lane l reads from[u] + l (+ the column's tap offset).
struct Runs16 {
    static constexpr int kMax = 8;  // more runs than this: one gather per row instead
    int count = 0;
    __mmask16 lanes[kMax];
    const float* from[kMax];
};

/// Panel rows k .. k+15 from their runs: per live column, its tap's runs merged into one
/// register by masked loads, then a 16 x 16 transpose and 16 stores; a quarter of the cost of
/// 16 gathers with one run, still less with several.
__attribute__((target("avx512f"))) void transpose_rows16(const Runs16& runs, const int32_t* roff,
                                                         int64_t nr, int64_t pw, float* dst) {
    for (int64_t jb = 0; jb < pw; jb += 16) {
        const int64_t lanes = std::min<int64_t>(16, pw - jb);
        const int64_t live = std::clamp<int64_t>(nr - jb, 0, lanes);
        __m512 r[16];
        for (int64_t j = 0; j < 16; ++j) {
            r[j] = _mm512_setzero_ps();
            if (j >= live) continue;
            for (int u = 0; u < runs.count; ++u)
                r[j] = _mm512_mask_loadu_ps(r[j], runs.lanes[u], runs.from[u] + roff[jb + j]);
        }
        transpose16x16(r);
        const auto m = static_cast<__mmask16>((1u << lanes) - 1);
        for (int64_t t = 0; t < 16; ++t) _mm512_mask_storeu_ps(dst + t * pw + jb, m, r[t]);
    }
}

/// The runs of rows k .. k+15 (row k is position q of chunk sample sj): a run ends where the
/// next position's float is not the next float (an output row's end, a stride, a new sample).
/// False when there are more than Runs16::kMax.
inline bool runs16(const WgradSource& s, int64_t sj, int64_t q, Runs16& out) {
    out.count = 0;
    const float* prev = nullptr;
    int start = 0;
    for (int l = 0; l <= 16; ++l) {
        const float* at = nullptr;
        if (l < 16) {
            at = s.xps[sj] + s.qoff[q];
            if (++q == s.P) q = 0, ++sj;
        }
        if (l > 0 && (l == 16 || at != prev + 1)) {  // run [start, l) ends
            if (out.count == Runs16::kMax) return false;
            out.lanes[out.count] = static_cast<__mmask16>(((1u << (l - start)) - 1) << start);
            out.from[out.count++] = prev - (l - 1);  // lane l - 1 reads prev
            start = l;
        }
        prev = at;
    }
    return true;
}

__attribute__((target("avx512f"))) void gather_rows_avx512(const WgradSource& s, int64_t k0,
                                                           int64_t kc, int64_t j0, int64_t nr,
                                                           int64_t pw, float* dst) {
    int64_t sj = k0 / s.P, q = k0 % s.P;  // row k0 + k is position q of chunk sample sj
    Runs16 runs;
    int64_t gather_to = 0;  // rows before it take gathers without another look at their runs
    for (int64_t k = 0; k < kc;) {
        if (k >= gather_to && k + 16 <= kc) {
            if (runs16(s, sj, q, runs)) {
                transpose_rows16(runs, s.roff + j0, nr, pw, dst + k * pw);
                k += 16, q += 16;
                while (q >= s.P) q -= s.P, ++sj;
                continue;
            }
            gather_to = k + 16;  // scattered positions (a stride): the scan would fail row by row
        }
        const float* base = s.xps[sj] + s.qoff[q];
        for (int64_t jb = 0; jb < pw; jb += 16) {
            const int64_t lanes = std::min<int64_t>(16, pw - jb);
            const int64_t live = std::clamp<int64_t>(nr - jb, 0, lanes);
            const auto take = static_cast<__mmask16>((1u << live) - 1);
            const __m512i idx = _mm512_maskz_loadu_epi32(take, s.roff + j0 + jb);
            const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), take, idx, base, 4);
            _mm512_mask_storeu_ps(dst + k * pw + jb, static_cast<__mmask16>((1u << lanes) - 1),
                                  v);
        }
        ++k;
        if (++q == s.P) q = 0, ++sj;
    }
}
#endif

void pack_wgrad_cols(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
                     float* dst) {
    const auto& s = *static_cast<const WgradSource*>(ctx);
#if defined(__x86_64__)
    if (cpu_isa() == CpuIsa::kAvx512) {  // the path in force (tests force each one)
        gather_rows_avx512(s, k0, kc, j0, nr, pw, dst);
        return;
    }
#endif
    int64_t sj = k0 / s.P, q = k0 % s.P;
    for (int64_t k = 0; k < kc; ++k) {
        const float* base = s.xps[sj] + s.qoff[q];
        float* d = dst + k * pw;
        for (int64_t j = 0; j < nr; ++j) d[j] = base[s.roff[j0 + j]];
        std::fill(d + nr, d + pw, 0.0f);
        if (++q == s.P) q = 0, ++sj;
    }
}

}  // namespace

WindowOffsets window_offsets(const Geometry& g) {
    const Conv2dParams& p = *g.p;
    thread_local std::vector<int32_t> t_roff;
    thread_local std::vector<int64_t> t_qoff;
    t_roff.resize(static_cast<std::size_t>(g.RL));
    t_qoff.resize(static_cast<std::size_t>(g.P));
    for (int64_t i = 0; i < g.RL; ++i) t_roff[i] = static_cast<int32_t>(g.rbase[g.live[i]]);
    for (int64_t oh = 0, q = 0; oh < p.ho; ++oh)
        for (int64_t ow = 0; ow < p.wo; ++ow, ++q) t_qoff[q] = (oh * g.wp + ow) * p.stride;
    return WindowOffsets{t_roff.data(), t_qoff.data()};
}

void im2col_transposed_blocks(const float* x, const Geometry& g, int64_t span, float* dst) {
    const int64_t n = g.p->n, blocks = (g.RL + span - 1) / span, per = g.P * span;
    const bool par = split_copy(n * g.P * g.RL);
    const WindowOffsets off = window_offsets(g);
    const WgradSource src{pad_chunk(x, 0, n, g, par), off.roff, off.qoff, g.P};
    parallel_for(par, blocks * n, [&](int64_t t) {
        const int64_t b = t / n, j = t % n, i0 = b * span;
        pack_wgrad_cols(&src, j * g.P, g.P, i0, std::min(span, g.RL - i0), span,
                        dst + (b * n + j) * per);
    });
}

void wgrad_group_leaf(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
                      float* leaf, bool parallel_gemm) {
    if (!parallel_gemm && wgrad_leaf_direct(x, dy, s0, s1, g, leaf)) return;
    const Conv2dParams& p = *g.p;
    const int64_t per = std::max<int64_t>(1, kWgradChunkK / std::max<int64_t>(g.P, 1));
    thread_local std::vector<float> t_dy;
    const WindowOffsets off = window_offsets(g);  // the same for every chunk
    for (int64_t s = s0; s < s1; s += per) {
        const int64_t sc = std::min(per, s1 - s), K = sc * g.P;
        const WgradSource src{pad_chunk(x, s, sc, g, split_copy(g.RL * K)), off.roff, off.qoff,
                              g.P};
        const float* a = dy + s * p.co * g.P;  // one sample: dY_s is already (Co, P)
        if (sc > 1) {
            float* d = scratch(t_dy, p.co * K);
            gather_dy(dy, s, sc, g, d);
            a = d;
        }
        // ORDER: leaf[o,i] continues the fma chain over k = (sample, q) ascending: from +0 at
        // s0, from the previous chunk's partial after it. A = dY (Co, K), B = col^T (K, RL).
        gemm(a, GemmBSource{pack_wgrad_cols, &src}, leaf,
             GemmParams{.m = p.co, .n = g.RL, .k = K, .accumulate = s > s0,
                        .parallel = parallel_gemm});
    }
}

void dgrad_chunk(const float* dy, int64_t s0, int64_t sc, const GemmPackedA& wt,
                 const Geometry& g, float* dcol, bool parallel_gemm) {
    const int64_t cols = sc * g.P;
    thread_local std::vector<float> t_b;
    float* b = scratch(t_b, g.p->co * cols);
    gather_dy(dy, s0, sc, g, b);
    // ORDER: dcol[i, (j,q)] = the fma chain over o ascending of w[o,live[i]] * dy[s0+j,o,q].
    gemm(wt, b, dcol, GemmParams{.m = g.RL, .n = cols, .k = g.p->co, .parallel = parallel_gemm});
}

}  // namespace dt::kernels::cpu::conv2d_internal
