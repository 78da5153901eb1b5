// SPDX-License-Identifier: MIT
// Thread-count checks of kernel tests: run a computation at 1 thread and at other counts and
// expect the same bits (the deterministic modes' promise), then restore OpenMP's default. The
// reduction sites' kernels get theirs from the accumulation-mode tester (tests/kernels/modes/).
#pragma once
#include <gtest/gtest.h>
#include <omp.h>

#include <initializer_list>
#include <vector>

#include "tests/support/compare.h"

namespace dt::test {

/// f() returns the outputs to compare (e.g. {p, momentum buffer}); each is expected bitwise
/// equal, at every count of `counts`, to the outputs at 1 thread.
template <typename F>
void expect_same_bits_at_thread_counts(F f, std::initializer_list<int> counts = {2, 3, 7}) {
    omp_set_num_threads(1);
    const std::vector<std::vector<float>> want = f();
    for (int t : counts) {
        omp_set_num_threads(t);
        const std::vector<std::vector<float>> got = f();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            EXPECT_TRUE(bitwise_equal(got[i], want[i]))
                << "output " << i << ", " << t << " threads";
    }
    omp_set_num_threads(omp_get_num_procs());
}

/// The same for a layer's three kernels: run() returns their outputs as members y (forward), dx
/// (dgrad) and dw (wgrad), outputs 0, 1 and 2 of the check.
template <typename Run>
void expect_layer_same_bits_at_thread_counts(Run run,
                                             std::initializer_list<int> counts = {2, 3, 4, 7}) {
    expect_same_bits_at_thread_counts(
        [&] {
            const auto r = run();
            return std::vector<std::vector<float>>{r.y, r.dx, r.dw};
        },
        counts);
}

}  // namespace dt::test
