// SPDX-License-Identifier: MIT
// Thread-count checks of kernel tests: run a computation at 1 thread and at other counts and
// expect the same bits (the deterministic modes' promise), and run the atomic mode under
// contention (2 and 4 threads) to check and count its results. Both restore OpenMP's default.
#pragma once
#include <gtest/gtest.h>
#include <omp.h>

#include <initializer_list>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/modes.h"

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
            EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i << ", " << t << " threads";
    }
    omp_set_num_threads(omp_get_num_procs());
}

/// The atomic mode under contention: run() (gradients with members dw and dx) 5 times at 2 and
/// at 4 threads, check(result) on each, and print how many distinct bit patterns dw and dx took
/// (information: the order is up to timing).
template <typename Run, typename Check>
void atomic_calls_under_contention(const std::string& label, Run run, Check check) {
    for (int threads : {2, 4}) {
        SCOPED_TRACE("threads=" + std::to_string(threads));
        omp_set_num_threads(threads);
        std::set<std::string> dw, dx;
        for (int i = 0; i < 5; ++i) {
            const auto g = run();
            check(g);
            dw.insert(bits_of(g.dw));
            dx.insert(bits_of(g.dx));
        }
        std::cout << "[ atomic   ] " << label << ": wgrad " << dw.size()
                  << " distinct of 5 calls, dgrad " << dx.size() << " (" << threads
                  << " threads)\n";
    }
    omp_set_num_threads(omp_get_num_procs());
}

}  // namespace dt::test
