// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA embedding kernels (kernels/cuda/embedding.cu), host-device,
// tested on the host over whole grids against the CPU (kernels/embedding.h's recipe).
// Forward: a thread per element (m, c), a copy. embed.grad (every mode but atomic) sorts first,
// so that each output element is then owned by one thread, llm.c's scatter-add without atomics:
//   count  a thread per row m counts the rows of its sequence b with its id v; the first of them
//          writes that count to start[v * B + b] (zeroed first): no atomics, no race;
//   scan   one block turns the counts into their exclusive prefix sums (start[V * B] = M), so
//          rows[start[k] .. start[k + 1]) is the run of key k = (v, b);
//   place  a thread per row m writes m at start[v * B + b] + (the rows before it in its sequence
//          with its id): each run holds its sequence's positions ascending;
//   grad   a thread per element (v, c) walks the runs of v, sequence by sequence: a leaf per
//          present sequence (+0, positions ascending), combined as the mode says: EmbedTree
//          (tree, kahan: the absent sequences skipped), the key's order (permuted: pi drawn by
//          one thread, permutation_into), or one exact accumulator over all of v's rows
//          (rounded, or added unrounded to the split batch's accumulator of the element).
// The counts are integers, so the sort is the same whatever the threads do. The count and place
// threads read their whole sequence: O(M * T) id reads, cheap for T up to a few thousand. The
// sort takes V * B + 1 + M int32 of scratch (M < 2^31).
// atomic: a thread per element (m, c) atomic-adds dy into the zeroed dtable, the mode's race.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/divisor.h"
#include "kernels/common/grid.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/embedding.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// Threads of the scan's one block.
inline constexpr uint32_t kEmbedScanThreads = 256;

/// The sort in scratch: start (V * B + 1), rows (M).
struct EmbedSort {
    int32_t* start;
    int32_t* rows;
};

/// Forward, element i = m * C + c. `C`: make_divisor(C), made by the launcher.
DT_HD void embedding_forward_body(const GridPos& t, const int64_t* ids, const float* table,
                                  float* y, int64_t M, const common::Divisor& C) {
    common::grid_stride(t, M * C.d, [&](int64_t i) {
        const common::QuotRem mc = common::divide(i, C);
        y[i] = table[ids[mc.q] * C.d + mc.r];
    });
}

/// Row m's place in its sequence: how many rows before it there have its id (`before`), and how
/// many in all (`total`). `T`: make_divisor(T).
struct EmbedRank {
    int64_t b, v, before, total;
};
DT_HD EmbedRank embed_rank(const int64_t* ids, int64_t m, const common::Divisor& T) {
    const common::QuotRem bt = common::divide(m, T);
    const int64_t* seq = ids + bt.q * T.d;
    EmbedRank r{bt.q, ids[m], 0, 0};
    for (int64_t i = 0; i < T.d; ++i) {
        const int64_t same = seq[i] == r.v ? 1 : 0;
        r.total += same;
        r.before += i < bt.r ? same : 0;
    }
    return r;
}

/// count: start[v * B + b] = the rows of sequence b with id v (written by the first of them).
DT_HD void embed_count_body(const GridPos& t, const int64_t* ids, EmbedSort s,
                            const EmbeddingParams& p, const common::Divisor& T) {
    const int64_t B = embedding_sequences(p);
    common::grid_stride(t, p.M, [&](int64_t m) {
        const EmbedRank r = embed_rank(ids, m, T);
        if (r.before == 0) s.start[r.v * B + r.b] = static_cast<int32_t>(r.total);
    });
}

/// scan, one block of t.threads threads: start[0 .. n) becomes its exclusive prefix sums and
/// start[n] the total. Each thread sums a slice, thread 0 scans the slices' sums in `shared`
/// (t.threads + 1 ints), each thread then writes its slice. Integer sums: no ORDER.
template <class Sync>
DT_HD void embed_scan_block(const GridPos& t, int32_t* shared, const Sync& sync, int32_t* start,
                            int64_t n) {
    const int64_t per = (n + t.threads - 1) / t.threads;
    const int64_t lo0 = t.thread * per, lo = lo0 < n ? lo0 : n, hi = lo + per < n ? lo + per : n;
    int32_t sum = 0;
    for (int64_t i = lo; i < hi; ++i) sum += start[i];
    shared[t.thread] = sum;
    sync();
    if (t.thread == 0) {
        int32_t run = 0;
        for (uint32_t j = 0; j < t.threads; ++j) {
            const int32_t c = shared[j];
            shared[j] = run;
            run += c;
        }
        shared[t.threads] = run;
    }
    sync();
    int32_t run = shared[t.thread];
    for (int64_t i = lo; i < hi; ++i) {
        const int32_t c = start[i];
        start[i] = run;
        run += c;
    }
    if (t.thread == 0) start[n] = shared[t.threads];
}

/// place: rows[start[v * B + b] + before] = m.
DT_HD void embed_place_body(const GridPos& t, const int64_t* ids, EmbedSort s,
                            const EmbeddingParams& p, const common::Divisor& T) {
    const int64_t B = embedding_sequences(p);
    common::grid_stride(t, p.M, [&](int64_t m) {
        const EmbedRank r = embed_rank(ids, m, T);
        s.rows[s.start[r.v * B + r.b] + r.before] = static_cast<int32_t>(m);
    });
}

/// grad, element i = v * C + c of dtable, every mode but atomic. `order`: pi (permuted only).
DT_HD void embedding_grad_body(const GridPos& t, const float* dy, EmbedSort s,
                               const uint32_t* order, float* dtable, const EmbeddingParams& p,
                               const common::Divisor& C) {
    const int64_t B = embedding_sequences(p);
    common::grid_stride(t, p.V * C.d, [&](int64_t i) {
        const common::QuotRem vc = common::divide(i, C);
        const int32_t* st = s.start + vc.q * B;  // sequence b's run: [st[b], st[b + 1])
        const auto term = [&](int64_t k) { return dy[s.rows[k] * C.d + vc.r]; };
        const auto leaf = [&](int64_t b) {  // ORDER: +0, positions ascending
            float a = 0.0f;
            for (int64_t k = st[b]; k < st[b + 1]; ++k) a = a + term(k);
            return a;
        };
        const bool part = p.exact_out != nullptr && p.accum.mode == common::AccumMode::kExact;
        if (st[0] == st[B]) {  // no id hits v: +0 in every mode (a part: no sum to add)
            if (!part) dtable[i] = 0.0f;
            return;
        }
        switch (p.accum.mode) {
            case common::AccumMode::kKahan: {  // ORDER: kahan leaves, T_k, kahan_value
                EmbedTree<common::KahanSum> tree;
                embed_tree_init(tree);
                for (int64_t b = 0; b < B; ++b) {
                    common::KahanSum k = common::kahan_zero();
                    for (int64_t j = st[b]; j < st[b + 1]; ++j) common::kahan_add(k, term(j));
                    embed_tree_push_if(tree, st[b] < st[b + 1], k, common::KahanMerge{});
                }
                dtable[i] = common::kahan_value(
                    embed_tree_finish(tree, common::kahan_zero(), common::KahanMerge{}));
                return;
            }
            case common::AccumMode::kExact: {  // ORDER: none, rounded once
                common::ExactAcc e;
                common::ExactShort seg;
                common::exact_init(e);
                common::exact_short_init(seg);
                for (int64_t k = st[0]; k < st[B]; ++k) {
                    common::exact_stream_add(e, seg, term(k));
                    // a normalisation every 2^30 terms: at most 1.5 units each (headroom 2^31)
                    if (((k - st[0]) & ((int64_t{1} << 30) - 1)) == (int64_t{1} << 30) - 1)
                        common::exact_normalise(e);
                }
                common::exact_stream_flush(e, seg);
                if (!part) {
                    dtable[i] = common::exact_value(e);
                    return;
                }
                common::exact_normalise(e);  // a part of a split batch: its own element
                common::exact_merge(p.exact_out[i], e);
                return;
            }
            case common::AccumMode::kPermuted: {  // ORDER: +0 + leaf(pi[0]) + leaf(pi[1]) + ...
                float acc = 0.0f;
                for (int64_t k = 0; k < B; ++k) {
                    const int64_t b = order[k];
                    if (st[b] < st[b + 1]) acc = acc + leaf(b);
                }
                dtable[i] = acc;
                return;
            }
            default: {  // tree. ORDER: T over the sequences' leaves
                EmbedTree<float> tree;
                embed_tree_init(tree);
                for (int64_t b = 0; b < B; ++b)
                    embed_tree_push_if(tree, st[b] < st[b + 1], leaf(b), common::FloatPlus{});
                dtable[i] = embed_tree_finish(tree, 0.0f, common::FloatPlus{});
                return;
            }
        }
    });
}

/// atomic, element i = m * C + c: dy atomic-added into the zeroed dtable. No ORDER on purpose.
DT_HD void embedding_atomic_body(const GridPos& t, const int64_t* ids, const float* dy,
                                 float* dtable, int64_t M, const common::Divisor& C) {
    common::grid_stride(t, M * C.d, [&](int64_t i) {
        const common::QuotRem mc = common::divide(i, C);
        common::atomic_add_float(dtable + ids[mc.q] * C.d + mc.r, dy[i]);
    });
}

}  // namespace dt::kernels::cuda
