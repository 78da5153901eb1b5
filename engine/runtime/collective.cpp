// SPDX-License-Identifier: MIT
// The world of one and the rank combination of engine/runtime/collective.h; the MPI world is in
// collective_mpi.cpp (compiled with MPI only).
#include "engine/runtime/collective.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/runtime/message_check.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/reduce_tree.h"

namespace dt {

namespace c = kernels::common;

void combine_rank_partials(const float* gathered, int P, int64_t n, const c::AccumSpec& spec,
                           float* out) {
    // Whole rows at a time (the tree stacks of reduce_tree.h / accum_kahan.h over rank rows):
    // every element sees the same operations as the scalar recipe, in the same order.
    switch (spec.mode) {
        case c::AccumMode::kKahan: {  // ORDER: the rank tree over (partial, +0)
            std::vector<c::KahanSum> slots(static_cast<std::size_t>(c::tree_slots(P) * n));
            for (int r = 0; r < P; ++r) {
                c::KahanSum* leaf = slots.data() + c::tree_leaf_slot(r) * n;
                for (int64_t i = 0; i < n; ++i) leaf[i] = c::KahanSum{gathered[r * n + i], 0.0f};
                c::kahan_tree_push(slots.data(), n, 0, n, r);
            }
            c::kahan_tree_finish(slots.data(), n, 0, n, P);
            for (int64_t i = 0; i < n; ++i)
                out[i] = c::kahan_value(slots[static_cast<std::size_t>(i)]);
            return;
        }
        case c::AccumMode::kExact:  // ORDER: none, rounded once
            for (int64_t i = 0; i < n; ++i) out[i] = c::exact_sum(gathered + i, P, n);
            return;
        case c::AccumMode::kPermuted: {  // ORDER: +0 + partial(o[0]) + partial(o[1]) + ...
            std::vector<uint32_t> order(static_cast<std::size_t>(P));
            c::permute_order(order.data(), P, spec.permute_key);
            std::vector<float> acc(static_cast<std::size_t>(n), 0.0f);
            for (int k = 0; k < P; ++k) {
                const float* row =
                    gathered + static_cast<int64_t>(order[static_cast<std::size_t>(k)]) * n;
                for (int64_t i = 0; i < n; ++i)
                    acc[static_cast<std::size_t>(i)] = acc[static_cast<std::size_t>(i)] + row[i];
            }
            std::copy(acc.begin(), acc.end(), out);
            return;
        }
        default: {  // tree (atomic never gets here: MPI sums it): ORDER: T over ranks 0..P-1
            std::vector<float> slots(static_cast<std::size_t>(c::tree_slots(P) * n));
            for (int r = 0; r < P; ++r) {
                std::copy(gathered + r * n, gathered + (r + 1) * n,
                          slots.data() + c::tree_leaf_slot(r) * n);
                c::tree_push(slots.data(), n, 0, n, r);
            }
            if (P > 0) c::tree_finish(slots.data(), n, 0, n, P);
            std::copy(slots.begin(), slots.begin() + n, out);
            return;
        }
    }
}

void combine_tree_rows_checked(float* rows, int P, int64_t n, float* out, int64_t first,
                               uint64_t* checks, uint64_t* out_check) {
    if (P == 1) {
        checks[0] = word_check(rows, n, first);
        if (out != rows) std::copy(rows, rows + n, out);
        *out_check = checks[0];
        return;
    }
    // ORDER: T over ranks 0..P-1 bottom up: at width w = 1, 2, 4, ..., row r (r a multiple of
    // 2w) = row r + row r + w where that row exists. Pairs, then pairs of pairs: the
    // left-complete tree (reduce_tree.h, its blocks property), e.g. P = 3: (p0 + p1) + p2. The
    // last pair (row 0 and the top half) is written straight to out. Width 1 reads every row
    // but an odd P's last as it was received; that one is read unchanged later, checked alone.
    if (P % 2 == 1) checks[P - 1] = word_check(rows + static_cast<int64_t>(P - 1) * n, n, first);
    for (int w = 1; w < P; w *= 2)
        for (int r = 0; r + w < P; r += 2 * w) {
            float* left = rows + static_cast<int64_t>(r) * n;
            const float* right = rows + static_cast<int64_t>(r + w) * n;
            const bool last = r == 0 && 2 * w >= P;
            float* dst = last ? out : left;
            if (w == 1) {
                pair_sum_checked(left, right, dst, n, first, &checks[r], &checks[r + 1],
                                 last ? out_check : nullptr);
                continue;
            }
            for (int64_t i = 0; i < n; ++i) dst[i] = left[i] + right[i];
            if (last) *out_check = word_check(out, n, first);
        }
}

namespace {

/// One process: every all-reduce is the combination of one partial, so that a run of one
/// process gives the bits of an mpirun of one.
class SingleProcess final : public Collective {
 public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int host_processes() const override { return 1; }
    std::string describe() const override { return "single process"; }
    void allreduce(float* data, int64_t n, const c::AccumSpec& spec) override {
        if (spec.mode == c::AccumMode::kAtomic) return;  // +0 + x is x (MPI adds nothing)
        std::vector<float> one(data, data + n);
        combine_rank_partials(one.data(), 1, n, spec, data);
    }
    void allreduce_exact(c::ExactAcc* accs, int64_t n) override {
        for (int64_t i = 0; i < n; ++i) c::exact_normalise(accs[i]);
    }
    int64_t allreduce_exact_rounded(const c::ExactAcc* accs, int64_t n, float* out) override {
        for (int64_t i = 0; i < n; ++i) out[i] = c::exact_value(accs[i]);
        return 0;
    }
    void broadcast(void*, std::size_t, int) override {}
    void barrier() override {}
    std::unique_ptr<Collective> duplicate() override { return std::make_unique<SingleProcess>(); }
    [[noreturn]] void abort(const std::string& why) override {
        std::fprintf(stderr, "detrain: error: %s\n", why.c_str());
        std::exit(1);
    }
};

}  // namespace

bool all_ranks(Collective& ranks, bool mine) {
    if (ranks.size() == 1) return mine;
    // MPI_SUM of 0 / 1 floats: exact below 2^24 ranks, in any order.
    float yes = mine ? 1.0f : 0.0f;
    ranks.allreduce(&yes, 1, c::accum_spec(c::AccumMode::kAtomic));
    return yes == static_cast<float>(ranks.size());
}

#if !DT_WITH_MPI
bool mpi_built() { return false; }
Collective& world() {
    static SingleProcess single;
    return single;
}
#else
Collective* mpi_world_if_launched();  // collective_mpi.cpp: nullptr when not under mpirun
bool mpi_built() { return true; }
Collective& world() {
    static Collective* w = [] {
        Collective* m = mpi_world_if_launched();
        return m != nullptr ? m : static_cast<Collective*>(new SingleProcess);
    }();
    return *w;
}
#endif

}  // namespace dt
