// SPDX-License-Identifier: MIT
// embedding on the CPU (recipes in kernels/embedding.h). Forward: rows m split statically, each a
// copy of its table row. embed.grad: once per call a stable counting sort groups the rows m by id
// (m ascending inside an id, so sequence by sequence, positions ascending). The work is then
// cut into tasks (v, a chunk of kChunk columns), each owned by one loop iteration: it walks row
// v's run, makes each present sequence's leaf for its columns and combines the leaves as the
// mode says (tree, kahan: EmbedTree; permuted: the key's order; exact: one accumulator per
// column). Frequent tokens own many rows; their chunks spread over the threads
// (schedule(static, 1)), and no sum is split. The atomic mode has threads own rows m instead.
#include "kernels/embedding.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kChunk = 16;  // columns per task (no effect on bits)

/// Rows grouped by id: rows[start[v] .. start[v + 1]) are the m with ids[m] == v, ascending.
struct RowsById {
    std::vector<int64_t> start, rows;
};

/// The stable counting sort, serial (O(M + V)); the calling thread's buffers, reused.
const RowsById& rows_by_id(const int64_t* ids, const EmbeddingParams& p) {
    thread_local RowsById r;
    thread_local std::vector<int64_t> next;
    r.start.assign(static_cast<std::size_t>(p.V + 1), 0);
    for (int64_t m = 0; m < p.M; ++m) ++r.start[static_cast<std::size_t>(ids[m] + 1)];
    for (int64_t v = 0; v < p.V; ++v) r.start[v + 1] += r.start[v];
    next.assign(r.start.begin(), r.start.end() - 1);
    r.rows.resize(static_cast<std::size_t>(p.M));
    for (int64_t m = 0; m < p.M; ++m) r.rows[static_cast<std::size_t>(next[ids[m]]++)] = m;
    return r;
}

/// f(b, k0, k1) for each sequence b present in rows[k0 .. k1) (ascending), its sub-run.
template <class F>
void each_sequence(const int64_t* rows, int64_t k0, int64_t k1, int64_t T, F&& f) {
    while (k0 < k1) {
        const int64_t b = rows[k0] / T;
        int64_t e = k0 + 1;
        while (e < k1 && rows[e] / T == b) ++e;
        f(b, k0, e);
        k0 = e;
    }
}

// ---- one task's columns as a value of the tree: kChunk lanes, each its own chain ----
struct Lanes {
    float v[kChunk];
};
struct LanesPlus {  // ORDER: left = left + right, per lane
    void operator()(Lanes& l, const Lanes& r) const {
        for (int64_t j = 0; j < kChunk; ++j) l.v[j] = l.v[j] + r.v[j];
    }
};
struct KahanLanes {
    common::KahanSum k[kChunk];
};
struct KahanLanesMerge {  // ORDER: kahan_merge(left, right), per lane
    void operator()(KahanLanes& l, const KahanLanes& r) const {
        for (int64_t j = 0; j < kChunk; ++j) common::kahan_merge(l.k[j], r.k[j]);
    }
};

/// One task: row v, columns [c0, c0 + w), w <= kChunk.
struct Task {
    int64_t v, c0, w;
};

/// The leaf of the sub-run rows[k0 .. k1) for the task's columns. ORDER: +0, rows ascending.
Lanes leaf_of(const float* dy, const int64_t* rows, int64_t k0, int64_t k1, const Task& t,
              int64_t C) {
    Lanes leaf{};
    for (int64_t k = k0; k < k1; ++k) {
        const float* row = dy + rows[k] * C + t.c0;
        if (t.w == kChunk) {
            for (int64_t j = 0; j < kChunk; ++j) leaf.v[j] = leaf.v[j] + row[j];
        } else {
            for (int64_t j = 0; j < t.w; ++j) leaf.v[j] = leaf.v[j] + row[j];
        }
    }
    return leaf;
}

// ---- tree and kahan: the leaves of the B sequences in order into EmbedTree ----
void grad_tree(const float* dy, const RowsById& r, const Task& t, float* out,
               const EmbeddingParams& p) {
    const int64_t B = embedding_sequences(p);
    EmbedTree<Lanes> tree;
    embed_tree_init(tree);
    int64_t next = 0;  // the next sequence to push
    each_sequence(r.rows.data(), r.start[t.v], r.start[t.v + 1], p.T,
                  [&](int64_t b, int64_t k0, int64_t k1) {
                      for (; next < b; ++next) embed_tree_skip(tree, LanesPlus{});
                      const Lanes leaf = leaf_of(dy, r.rows.data(), k0, k1, t, p.C);
                      embed_tree_push(tree, leaf, LanesPlus{});
                      ++next;
                  });
    for (; next < B; ++next) embed_tree_skip(tree, LanesPlus{});
    const Lanes total = embed_tree_finish(tree, Lanes{}, LanesPlus{});  // ORDER: T
    std::copy_n(total.v, t.w, out);
}

void grad_kahan(const float* dy, const RowsById& r, const Task& t, float* out,
                const EmbeddingParams& p) {
    const int64_t B = embedding_sequences(p);
    EmbedTree<KahanLanes> tree;
    embed_tree_init(tree);
    int64_t next = 0;
    each_sequence(r.rows.data(), r.start[t.v], r.start[t.v + 1], p.T,
                  [&](int64_t b, int64_t k0, int64_t k1) {
                      for (; next < b; ++next) embed_tree_skip(tree, KahanLanesMerge{});
                      KahanLanes leaf;
                      common::kahan_init_row(leaf.k, kChunk);  // ORDER: from (+0, +0)
                      for (int64_t k = k0; k < k1; ++k)        // ORDER: positions ascending
                          common::kahan_add_row(leaf.k, dy + r.rows[k] * p.C + t.c0, t.w);
                      embed_tree_push(tree, leaf, KahanLanesMerge{});
                      ++next;
                  });
    for (; next < B; ++next) embed_tree_skip(tree, KahanLanesMerge{});
    KahanLanes zero;
    common::kahan_init_row(zero.k, kChunk);
    const KahanLanes total = embed_tree_finish(tree, zero, KahanLanesMerge{});  // ORDER: T_k
    common::kahan_value_row(total.k, out, t.w);
}

// ---- exact: one accumulator per column over the whole run ----
// ORDER: none (integer accumulation), rounded once.
void grad_exact(const float* dy, const RowsById& r, const Task& t, float* out,
                const EmbeddingParams& p) {
    common::ExactAcc acc[kChunk];
    common::exact_init_row(acc, t.w);
    const int64_t k0 = r.start[t.v], k1 = r.start[t.v + 1];
    for (int64_t k = k0; k < k1; ++k) {
        common::exact_add_row(acc, dy + r.rows[k] * p.C + t.c0, t.w);
        if (((k - k0) & ((int64_t{1} << 30) - 1)) == (int64_t{1} << 30) - 1)  // headroom 2^31
            for (int64_t j = 0; j < t.w; ++j) common::exact_normalise(acc[j]);
    }
    if (p.exact_out == nullptr) return common::exact_value_row(acc, out, t.w);
    common::ExactAcc* part = p.exact_out + t.v * p.C + t.c0;  // a part of a split batch
    for (int64_t j = 0; j < t.w; ++j) {
        common::exact_normalise(acc[j]);
        common::exact_merge(part[j], acc[j]);
    }
}

// ---- permuted: the present sequences' leaves in the order of their rank in pi ----
void grad_permuted(const float* dy, const RowsById& r, const Task& t, float* out,
                   const EmbeddingParams& p, const std::vector<uint32_t>& rank) {
    struct Seq {
        uint32_t rank;
        int64_t k0, k1;
    };
    thread_local std::vector<Seq> seqs;
    seqs.clear();
    each_sequence(r.rows.data(), r.start[t.v], r.start[t.v + 1], p.T,
                  [&](int64_t b, int64_t k0, int64_t k1) {
                      seqs.push_back({rank[b], k0, k1});
                  });
    std::sort(seqs.begin(), seqs.end(), [](const Seq& a, const Seq& b) { return a.rank < b.rank; });
    Lanes acc{};  // ORDER: +0 + leaf(pi[0]) + leaf(pi[1]) + ... (absent leaves left out)
    for (const Seq& s : seqs) LanesPlus{}(acc, leaf_of(dy, r.rows.data(), s.k0, s.k1, t, p.C));
    std::copy_n(acc.v, t.w, out);
}

// ---- atomic: threads own rows m, each element atomic-added into the zeroed dtable ----
// No ORDER on purpose. Parallel whenever there are 2+ rows (the mode's point is the race).
void grad_atomic(const int64_t* ids, const float* dy, float* dtable, const EmbeddingParams& p) {
    std::fill(dtable, dtable + p.V * p.C, 0.0f);
#pragma omp parallel for schedule(static) if (p.M > 1 && !omp_in_parallel())
    for (int64_t m = 0; m < p.M; ++m)
        common::atomic_add_row(dtable + ids[m] * p.C, dy + m * p.C, p.C);
}

}  // namespace

void embedding_forward(const int64_t* ids, const float* table, float* y, const EmbeddingParams& p) {
#pragma omp parallel for schedule(static) if (p.M * p.C > 65536)
    for (int64_t m = 0; m < p.M; ++m) std::copy_n(table + ids[m] * p.C, p.C, y + m * p.C);
}

void embedding_backward(const int64_t* ids, const float* dy, float* dtable,
                        const EmbeddingParams& p) {
    const common::AccumMode mode = p.accum.mode;
    if (mode == common::AccumMode::kAtomic) return grad_atomic(ids, dy, dtable, p);
    const RowsById& r = rows_by_id(ids, p);
    std::vector<uint32_t> rank;  // permuted: rank[b] = the position of sequence b in pi
    if (mode == common::AccumMode::kPermuted) {
        const int64_t B = embedding_sequences(p);
        std::vector<uint32_t> order(static_cast<std::size_t>(B));
        common::permute_order(order.data(), B, p.accum.permute_key);
        rank.resize(order.size());
        for (int64_t k = 0; k < B; ++k) rank[order[k]] = static_cast<uint32_t>(k);
    }
    const int64_t chunks = (p.C + kChunk - 1) / kChunk, tasks = p.V * chunks;
#pragma omp parallel for schedule(static, 1) if (p.M * p.C > 32768)
    for (int64_t i = 0; i < tasks; ++i) {
        const int64_t v = i / chunks, c0 = (i % chunks) * kChunk;
        const Task t{v, c0, std::min(kChunk, p.C - c0)};
        float* out = dtable != nullptr ? dtable + v * p.C + c0 : nullptr;  // a part: null
        if (r.start[v] == r.start[v + 1]) {  // no id hits v: +0 in every mode (a part: no sum)
            if (p.exact_out == nullptr || mode != common::AccumMode::kExact)
                std::fill(out, out + t.w, 0.0f);
            continue;
        }
        switch (mode) {
            case common::AccumMode::kTree:
                grad_tree(dy, r, t, out, p);
                break;
            case common::AccumMode::kKahan:
                grad_kahan(dy, r, t, out, p);
                break;
            case common::AccumMode::kExact:
                grad_exact(dy, r, t, out, p);
                break;
            case common::AccumMode::kPermuted:
                grad_permuted(dy, r, t, out, p, rank);
                break;
            case common::AccumMode::kAtomic:
                break;  // above
        }
    }
}

}  // namespace dt::kernels::cpu
