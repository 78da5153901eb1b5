// SPDX-License-Identifier: MIT
// cpu::gemm, the entry points of kernels/gemm.h (recipe gemm_f32_k_fma; reference
// kernels/ref/gemm_ref.h), and the blocked product behind them (BLIS style): C in blocks of NC
// columns, K in blocks of KC taken in ascending order (a partial sum is stored to C and
// reloaded: exact), each (KC, NC) step cut into work units (blocks of C) owned by one loop
// iteration, each unit packed A micro-panels times B panels (packed, or read in place from row
// pointers) in MR x NR register tiles, one tile shape per ISA (kernels/cpu_isa.h). The rest of
// the folder: gemm_microkernels.h (the tiles), gemm_pack_panels.h (packing), gemm_small_path.h
// (small serial products, unpacked), gemm_thread_split.h (column slices or work units).
// ORDER: no path splits or reorders the k loop of an element, so the bits depend on the inputs
// only (kernels/gemm.h).
#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm/gemm_microkernels.h"
#include "kernels/cpu/gemm/gemm_pack_panels.h"
#include "kernels/cpu/gemm/gemm_small_path.h"
#include "kernels/cpu/gemm/gemm_thread_split.h"
#include "kernels/cpu/parallel_for.h"

namespace dt::kernels::cpu {
namespace {

using namespace gemm_detail;

constexpr int64_t kKc = kGemmKc;  // K block depth
constexpr int64_t kNc = 1024;      // B block width (multiple of kNu)
constexpr int64_t kMc = 128;       // A block height (a multiple of every MR)
constexpr int64_t kNu = 128;       // columns per work unit (a power of two >= every NR)
constexpr int64_t kMinUnits = 8;   // parallel work units wanted per (KC, NC) step

/// A growable 64-byte aligned scratch buffer (one per thread and purpose).
struct Scratch {
    std::vector<float> v;
    float* get(int64_t n) {
        if (static_cast<int64_t>(v.size()) < n + 16) v.resize(static_cast<std::size_t>(n + 16));
        auto p = reinterpret_cast<uintptr_t>(v.data());
        return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
    }
};
thread_local Scratch t_apack, t_bpack, t_apack_shared;

/// Width of B panel q (of NR columns) when the block has nc columns: a last panel of at most
/// NR/2 columns is packed (and computed) at half width.
template <class K>
int64_t panel_width(int64_t q, int64_t nc) {
    return plain_panel_width(K::kNr, q, nc);
}

// ---- driver ----

/// One tile; edge tiles (mr < MR or nr < W) touch only their existing rows and columns of C, and
/// a short tile computes only ROWS = MR, MR/2, MR/4, ... (the least of them >= mr) rows.
template <class K, int W, int ROWS = K::kMr, class B>
void tile(int64_t kc, const float* ap, const B& b, float* c, int64_t ldc, int64_t mr, int64_t nr,
          bool load_c) {
    if constexpr (ROWS > 1) {
        if (mr <= ROWS / 2) {
            tile<K, W, ROWS / 2>(kc, ap, b, c, ldc, mr, nr, load_c);
            return;
        }
    }
    K::template ukr<W, ROWS>(kc, ap, b, c, ldc, mr, nr, load_c);
}

/// Packs all of A: K blocks of kKc in order, each holding round_up(M, MR) rows as MR-row panels
/// (block at pc * Mpad, panel of rows [i0, i0+MR) at + i0 * kc).
template <class K>
void pack_a_all(const float* a, float* dst, const GemmParams& p) {
    const int64_t mpad = (p.m + K::kMr - 1) / K::kMr * K::kMr, lda = gemm_lda(p);
    const int64_t panels = mpad / K::kMr, kblocks = (p.k + kKc - 1) / kKc;
    // Panels split over the threads when large (values move only).
    const bool par = p.parallel && mpad * p.k >= (int64_t{1} << 16) && !omp_in_parallel();
    parallel_for(par, kblocks * panels, [&](int64_t u) {
        const int64_t pc = (u / panels) * kKc, i0 = (u % panels) * K::kMr;
        const int64_t kc = std::min(kKc, p.k - pc);
        pack_a_panel(a, lda, p.trans_a, i0, std::min(K::kMr, p.m - i0), K::kMr, pc, kc,
                     dst + pc * mpad + i0 * kc);
    });
}

/// The B operand: a source that packs panels, or row pointers (full panels are read in place,
/// only a partial last panel is packed).
struct BOperand {
    const GemmBSource* src;
    const float* const* rows;
    const PlainB* plain = nullptr;  // src's matrix when it is a plain, untransposed one
};

/// The blocked product. `apacked` (from pack_a_all) or null to pack A per work unit. B's columns
/// are read from j_base on (a column slice of a larger product: c and p.n are the slice's).
template <class K>
void gemm_run(const float* a, const float* apacked, const BOperand& b, float* c,
              const GemmParams& p, int64_t j_base = 0) {
    constexpr int64_t kMr = K::kMr, kNr = K::kNr;
    const int64_t lda = gemm_lda(p), ldc = gemm_ldc(p);
    const int64_t mpad = (p.m + kMr - 1) / kMr * kMr;
    const bool par = gemm_threads(p) > 1;
    float* bpack = t_bpack.get(kKc * ((std::min(p.n, kNc) + kNr - 1) / kNr) * kNr);
    // Parallel with A not packed beforehand: each K block of A is packed once, panels split
    // over the threads, and shared by every work unit (units of one row block would otherwise
    // each pack the same A block again).
    float* ashared = par && !apacked ? t_apack_shared.get(mpad * kKc) : nullptr;
    for (int64_t jc = 0; jc < p.n; jc += kNc) {
        const int64_t nc = std::min(kNc, p.n - jc);
        const int64_t npanels = (nc + kNr - 1) / kNr;
        // ORDER: K blocks in ascending order; the first starts from +0 (or C when accumulating).
        for (int64_t pc = 0; pc < p.k; pc += kKc) {
            const int64_t kc = std::min(kKc, p.k - pc);
            const bool load_c = p.accumulate || pc > 0;
            // Panels [0, q_packed) are read in place (row operand), the rest are packed.
            const int64_t q_packed = b.rows ? nc / kNr : 0;
            const float* const* rows = b.rows ? b.rows + pc : nullptr;  // B's rows from pc on
            auto pack_b = [&](int64_t q) {  // one panel (GemmBSource or row table)
                const int64_t j0 = j_base + jc + q * kNr, nr = std::min(kNr, nc - q * kNr);
                float* dst = bpack + q * kc * kNr;
                if (b.rows) {
                    pack_rows_panel(rows, kc, j0, nr, panel_width<K>(q, nc), dst);
                } else {
                    b.src->pack(b.src->ctx, pc, kc, j0, nr, panel_width<K>(q, nc), dst);
                }
            };
            auto pack_b_range = [&](int64_t q_lo, int64_t q_hi) {
                if (b.plain)
                    return pack_plain_rows(*b.plain, pc, kc, j_base + jc, nc, q_lo, q_hi, K::kNr,
                                           bpack);
                for (int64_t q = q_lo; q < q_hi; ++q) pack_b(q);
            };
            // Work units, each owning a block of C: MC rows x the whole block when serial; when
            // parallel MC x kNu, halved (columns to one panel, rows while the halves are whole
            // MR tiles) until there are kMinUnits of them. The split depends on the shape only,
            // and no split changes a bit.
            int64_t unit_w = par ? kNu : nc, unit_m = kMc;
            auto units_of = [&](int64_t um, int64_t uw) {
                return ((p.m + um - 1) / um) * ((nc + uw - 1) / uw);
            };
            while (par && units_of(unit_m, unit_w) < kMinUnits && unit_w > kNr) unit_w /= 2;
            while (par && units_of(unit_m, unit_w) < kMinUnits && unit_m % (2 * kMr) == 0)
                unit_m /= 2;
            const int64_t mblocks = (p.m + unit_m - 1) / unit_m;
            const int64_t groups = (nc + unit_w - 1) / unit_w;
            auto unit = [&](int64_t u) {
                const int64_t ic = (u / groups) * unit_m, mc = std::min(unit_m, p.m - ic);
                const int64_t j_lo = (u % groups) * unit_w, j_hi = std::min(nc, j_lo + unit_w);
                const float* ablock = apacked   ? apacked + pc * mpad + ic * kc
                                      : ashared ? ashared + ic * kc
                                                : nullptr;
                if (!ablock) {
                    float* ap = t_apack.get(kMc * kc);
                    for (int64_t ir = 0; ir < mc; ir += kMr)
                        pack_a_panel(a, lda, p.trans_a, ic + ir, std::min(kMr, mc - ir), kMr, pc,
                                     kc, ap + ir * kc);
                    ablock = ap;
                }
                for (int64_t jr = j_lo; jr < j_hi; jr += kNr) {
                    const int64_t q = jr / kNr, nr = std::min(kNr, nc - jr);
                    if constexpr (K::kWidePanels > 1) {  // whole panels, side by side
                        constexpr int64_t kWide = K::kWidePanels * kNr;
                        auto wide = [&](const auto& bw) {
                            for (int64_t ir = 0; ir < mc; ir += kMr)
                                K::ukr_wide(kc, ablock + ir * kc, bw,
                                            c + (ic + ir) * ldc + jc + jr, ldc,
                                            std::min(kMr, mc - ir), load_c);
                            jr += kWide - kNr;
                        };
                        if (q + K::kWidePanels <= q_packed && jr + kWide <= j_hi) {
                            wide(BRowTable{rows, j_base + jc + jr});
                            continue;
                        }
                        if (q >= q_packed && jr + kWide <= j_hi) {  // three whole packed panels
                            wide(BPanels{bpack + q * kc * kNr, kc * kNr});
                            continue;
                        }
                    }
                    const bool half = panel_width<K>(q, nc) < kNr;
                    const BRowTable in_place{rows, j_base + jc + jr};
                    const BPacked packed{bpack + q * kc * kNr, half ? kNr / 2 : kNr};
                    for (int64_t ir = 0; ir < mc; ir += kMr) {
                        float* ct = c + (ic + ir) * ldc + jc + jr;
                        const int64_t mr = std::min(kMr, mc - ir);
                        const float* ap = ablock + ir * kc;
                        if (q < q_packed) {
                            tile<K, kNr>(kc, ap, in_place, ct, ldc, mr, nr, load_c);
                        } else if (half) {
                            tile<K, kNr / 2>(kc, ap, packed, ct, ldc, mr, nr, load_c);
                        } else {
                            tile<K, kNr>(kc, ap, packed, ct, ldc, mr, nr, load_c);
                        }
                    }
                }
            };
            if (par) {
#pragma omp parallel
                {
                    {  // a contiguous range of panels per thread
                        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
                        const int64_t span = npanels - q_packed;
                        pack_b_range(q_packed + span * t / nt, q_packed + span * (t + 1) / nt);
                    }
                    if (ashared) {
#pragma omp for schedule(static)
                        for (int64_t i0 = 0; i0 < p.m; i0 += kMr)
                            pack_a_panel(a, lda, p.trans_a, i0, std::min(kMr, p.m - i0), kMr, pc,
                                         kc, ashared + i0 * kc);
                    }
                }
#pragma omp parallel for schedule(static)
                for (int64_t u = 0; u < mblocks * groups; ++u) unit(u);
            } else {
                pack_b_range(q_packed, npanels);
                for (int64_t u = 0; u < mblocks * groups; ++u) unit(u);
            }
        }
    }
}

/// The blocked product, split into column slices when the shape asks for it (for_column_slices;
/// B's columns from j0 on), else into work units per (KC, NC) step (gemm_run).
template <class K>
void gemm_split(const float* a, const float* apacked, const BOperand& b, float* c,
                const GemmParams& p) {
    const bool sliced = for_column_slices(p, [&](int64_t j0, const GemmParams& slice) {
        gemm_run<K>(a, apacked, b, c + j0, slice, j0);
    });
    if (!sliced) gemm_run<K>(a, apacked, b, c, p);
}

/// Handles empty shapes, then runs the path `isa`.
void gemm_dispatch(CpuIsa isa, const float* a, const float* apacked, const BOperand& b,
                   float* c, const GemmParams& p) {
    if (p.m <= 0 || p.n <= 0) return;
    if (p.k <= 0) {  // empty sum: +0, or C unchanged when accumulating
        if (!p.accumulate) {
            const int64_t ldc = gemm_ldc(p);
            for (int64_t i = 0; i < p.m; ++i) std::fill(c + i * ldc, c + i * ldc + p.n, 0.0f);
        }
        return;
    }
    switch (isa) {
#if DT_GEMM_X86
        case CpuIsa::kAvx512: gemm_split<KernelAvx512>(a, apacked, b, c, p); return;
        case CpuIsa::kAvx2: gemm_split<KernelAvx2>(a, apacked, b, c, p); return;
#endif
        default: gemm_split<KernelScalar>(a, apacked, b, c, p); return;
    }
}

}  // namespace

int64_t gemm_tile_rows(CpuIsa isa) {
    switch (isa) {
#if DT_GEMM_X86
        case CpuIsa::kAvx512: return KernelAvx512::kMr;
        case CpuIsa::kAvx2: return KernelAvx2::kMr;
#endif
        default: return KernelScalar::kMr;
    }
}

namespace {

/// A plain, untransposed B up to this many elements (K x N) is read in place.
constexpr int64_t kInPlaceB = int64_t{1} << 16;

/// Plain B: read in place through a row table when small and not transposed (no TLB pressure),
/// packed otherwise. Either way the same values reach the same ORDER.
template <class Run>
void with_plain_b(const float* b, const GemmParams& p, Run&& run) {
    const int64_t ldb = gemm_ldb(p);
    if (!p.trans_b && p.k * p.n <= kInPlaceB) {
        thread_local std::vector<const float*> t_rows;
        if (static_cast<int64_t>(t_rows.size()) < p.k) t_rows.resize(static_cast<std::size_t>(p.k));
        for (int64_t k = 0; k < p.k; ++k) t_rows[k] = b + k * ldb;
        run(BOperand{nullptr, t_rows.data()});
        return;
    }
    const PlainB plain{b, ldb, p.trans_b};
    const GemmBSource src{pack_plain_b, &plain};
    run(BOperand{&src, nullptr, p.trans_b ? nullptr : &plain});
}

/// A plain, untransposed B up to this many elements (K x N) may take the small path: 32 x 392 x
/// 288 (113K) ran 1.26x OpenBLAS there, 0.98x on the blocked path.
constexpr int64_t kSmallPathB = int64_t{1} << 17;

/// Products for the small path (gemm_small_path.h): serial, on AVX-512, B plain, untransposed, at
/// most kSmallPathB elements and read in place, nothing empty; a product of several K blocks
/// only with a whole 48-column group (128 x 16 x 576 ran 0.94x OpenBLAS there, 1.03x blocked).
/// A^T, a pre-packed and a row-major A are read where they lie.
bool takes_small_path(CpuIsa isa, const GemmParams& p) {
    return isa == CpuIsa::kAvx512 && !p.trans_b && p.m > 0 && p.n > 0 && p.k > 0 &&
           p.k * p.n <= kSmallPathB && (p.k <= kKc || p.n >= kSmallGroupCols) &&
           gemm_threads(p) == 1;
}

/// B's columns from j0 on.
const float* b_from(const float* b, const GemmParams& p, int64_t j0) {
    return p.trans_b ? b + j0 * gemm_ldb(p) : b + j0;
}

#if DT_GEMM_X86
/// The small path's view of rows i0.. of K block [pc, pc + kc) of an A packed for m rows
/// (gemm_pack_a's layout on AVX-512: block pc at data + pc * Mpad, in it the panel of rows
/// [i0 - i0 % MR, +MR) at + panel row * kc, step MR).
AdjacentA packed_rows(const float* data, int64_t m, int64_t i0, int64_t pc, int64_t kc) {
    constexpr int64_t kMr = KernelAvx512::kMr;
    const int64_t mpad = (m + kMr - 1) / kMr * kMr;
    return AdjacentA{data + pc * mpad + i0 / kMr * kMr * kc + i0 % kMr, kMr};
}
#endif

}  // namespace

void gemm(const float* a, const float* b, float* c, const GemmParams& p) {
    // Sliced before the path is chosen, so that slices may take the small path.
    if (for_column_slices(p, [&](int64_t j0, const GemmParams& slice) {
            gemm(a, b_from(b, p, j0), c + j0, slice);
        }))
        return;
#if DT_GEMM_X86
    if (takes_small_path(cpu_isa(), p)) {
        if (p.trans_a) {  // A^T (K, M): rows side by side where it lies
            const int64_t lda = gemm_lda(p);
            auto rows = [&](int64_t i0, int64_t pc, int64_t) {
                return AdjacentA{a + pc * lda + i0, lda};
            };
            gemm_small_avx512(rows, b, gemm_ldb(p), c, gemm_ldc(p), p.m, p.n, p.k, p.accumulate);
        } else {  // a row-major A: read in place, its adjacent copy made on the way
            const RowMajorA rows{a, gemm_lda(p), t_apack.get(std::min(p.k, kKc) * p.m)};
            gemm_small_avx512(rows, b, gemm_ldb(p), c, gemm_ldc(p), p.m, p.n, p.k, p.accumulate);
        }
        return;
    }
#endif
    with_plain_b(b, p,
                 [&](const BOperand& op) { gemm_dispatch(cpu_isa(), a, nullptr, op, c, p); });
}

void gemm(const float* a, const GemmBSource& b, float* c, const GemmParams& p) {
    gemm_dispatch(cpu_isa(), a, nullptr, BOperand{&b, nullptr}, c, p);
}

void gemm(const float* a, const GemmBRows& b, float* c, const GemmParams& p) {
    gemm_dispatch(cpu_isa(), a, nullptr, BOperand{nullptr, b.rows}, c, p);
}

void gemm(const GemmPackedA& a, const float* b, float* c, const GemmParams& p) {
    if (for_column_slices(p, [&](int64_t j0, const GemmParams& slice) {
            gemm(a, b_from(b, p, j0), c + j0, slice);
        }))
        return;
#if DT_GEMM_X86
    if (takes_small_path(a.isa, p)) {
        auto rows = [&](int64_t i0, int64_t pc, int64_t kc) {
            return packed_rows(a.data, p.m, i0, pc, kc);
        };
        gemm_small_avx512(rows, b, gemm_ldb(p), c, gemm_ldc(p), p.m, p.n, p.k, p.accumulate);
        return;
    }
#endif
    with_plain_b(b, p,
                 [&](const BOperand& op) { gemm_dispatch(a.isa, nullptr, a.data, op, c, p); });
}

void gemm(const GemmPackedA& a, const GemmBSource& b, float* c, const GemmParams& p) {
    gemm_dispatch(a.isa, nullptr, a.data, BOperand{&b, nullptr}, c, p);
}

void gemm(const GemmPackedA& a, const GemmBRows& b, float* c, const GemmParams& p) {
    gemm_dispatch(a.isa, nullptr, a.data, BOperand{nullptr, b.rows}, c, p);
}

int64_t gemm_packed_a_size(CpuIsa isa, const GemmParams& p) {
    const int64_t mr = gemm_tile_rows(isa);
    return (p.m + mr - 1) / mr * mr * p.k;
}

GemmPackedA gemm_pack_a(CpuIsa isa, const float* a, float* buffer, const GemmParams& p) {
    switch (isa) {
#if DT_GEMM_X86
        case CpuIsa::kAvx512: pack_a_all<KernelAvx512>(a, buffer, p); break;
        case CpuIsa::kAvx2: pack_a_all<KernelAvx2>(a, buffer, p); break;
#endif
        default: isa = CpuIsa::kScalar, pack_a_all<KernelScalar>(a, buffer, p); break;
    }
    return GemmPackedA{buffer, isa};
}

}  // namespace dt::kernels::cpu
