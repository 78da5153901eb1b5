// SPDX-License-Identifier: MIT
// The all-reduce of site grad.allreduce per mode and size (engine/runtime/collective.h), under
// mpirun: every process runs the same fixed sequence (no adaptive iteration counts, which would
// let ranks disagree on how many collectives to run), each timed from a barrier to a barrier,
// so the time is the slowest process's. Rank 0 prints one JSON object per (mode, size): median
// and minimum seconds, the bytes a process sends and receives, and elements per second. Bytes:
// the fixed-order modes send every other rank its block of partials and its combined block,
// 2 x 4 n (P - 1) / P each way; atomic and exact-accumulators hand MPI 4 n and 44 n (packed,
// engine/runtime/exact_pack.h) and MPI's algorithm decides the rest (at least the result is
// received); exact-rounded, the gradients' exchange, reports what it handed MPI (12 bytes per
// element where the values fit int64 windows, 48 where not), of which (P - 1) / P leaves.
// On one machine the processes share its cores and memory: this measures overhead, not the
// bandwidth of a network.
//   mpirun -np P dt_allreduce_bench [--sizes 1000,100000,1000000] [--reps 15]
//                                   [--modes atomic,tree,...,exact-accumulators,exact-rounded]
//                                   [--inputs synthetic|MODEL]
// --inputs MODEL (smallcnn, resnet18, ... of BM_TrainStep) takes the values from one real step
// of that model on each process (bench/mpi/step_gradients.h), repeated to fill each size:
// its float gradients, and its exact sums for the exact modes. The default, synthetic, gives
// element i the float 1 / (1 + (i + rank) % 97), one per accumulator.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/mpi/step_gradients.h"
#include "engine/runtime/collective.h"
#include "kernels/common/accum_exact.h"

namespace {

namespace c = dt::kernels::common;
using Clock = std::chrono::steady_clock;

std::vector<int64_t> parse_sizes(const char* text) {
    std::vector<int64_t> v;
    for (const char* p = text; *p != '\0';) {
        char* end = nullptr;
        v.push_back(std::strtoll(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != '\0') break;
    }
    return v;
}

struct Timing {
    double median = 0, min = 0;
};

template <class Op>
Timing time_it(dt::Collective& w, int reps, Op&& op) {
    std::vector<double> s;
    op();  // warm-up (buffers, MPI's first-use setup)
    for (int r = 0; r < reps; ++r) {
        w.barrier();
        const Clock::time_point t0 = Clock::now();
        op();
        w.barrier();  // the slowest process's time
        s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(s.begin(), s.end());
    return {s[s.size() / 2], s.front()};
}

void print(dt::Collective& w, const char* mode, int64_t n, const Timing& t, double sent,
           double received) {
    if (w.rank() != 0) return;
    std::printf(
        "{\"bench\": \"allreduce\", \"processes\": %d, \"mode\": \"%s\", \"elements\": %lld, "
        "\"median_s\": %.6g, \"min_s\": %.6g, \"bytes_sent_per_process\": %.0f, "
        "\"bytes_received_per_process\": %.0f, \"elements_per_s\": %.4g}\n",
        w.size(), mode, static_cast<long long>(n), t.median, t.min, sent, received,
        static_cast<double>(n) / t.median);
    std::fflush(stdout);
}

}  // namespace

constexpr const char* kUsage =
    "usage: mpirun -np P dt_allreduce_bench [--sizes 1000,100000,1000000] [--reps 15]\n"
    "         [--modes atomic,tree,kahan,exact,permuted,exact-accumulators,exact-rounded]\n"
    "         [--inputs synthetic|MODEL]\n"
    "Times the gradients' all-reduce per mode and size, barrier to barrier (the slowest\n"
    "process), and prints one JSON object per mode and size: median and minimum seconds,\n"
    "bytes sent and received per process, elements per second. --inputs MODEL (smallcnn,\n"
    "resnet18, ...) takes one real training step's gradients and exact sums per process.\n";

int main(int argc, char** argv) {
    std::vector<int64_t> sizes = {1000, 100000, 1000000};
    int reps = 15;
    std::string modes;  // empty: all
    std::string inputs = "synthetic";
    for (int i = 1; i < argc; i += 2) {
        const bool has_value = i + 1 < argc;
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("%s", kUsage);
            return 0;
        } else if (has_value && std::strcmp(argv[i], "--sizes") == 0) {
            sizes = parse_sizes(argv[i + 1]);
        } else if (has_value && std::strcmp(argv[i], "--reps") == 0) {
            reps = std::max(1, std::atoi(argv[i + 1]));
        } else if (has_value && std::strcmp(argv[i], "--modes") == 0) {
            modes = std::string(",").append(argv[i + 1]).append(",");
        } else if (has_value && std::strcmp(argv[i], "--inputs") == 0) {
            inputs = argv[i + 1];
        } else {
            std::fprintf(stderr, "dt_allreduce_bench: unknown argument or missing value: %s\n%s",
                         argv[i], kUsage);
            return 2;
        }
    }
    auto wanted = [&](const char* mode) {
        return modes.empty() ||
               modes.find(std::string(",").append(mode).append(",")) != std::string::npos;
    };
    dt::Collective& w = dt::world();
    const double P = w.size();
    dt::bench::StepGradients real;
    if (inputs != "synthetic") real = dt::bench::step_gradients(inputs);
    for (int64_t n : sizes) {
        std::vector<float> data(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            data[static_cast<std::size_t>(i)] =
                real.floats.empty() ? 1.0f / static_cast<float>(1 + (i + w.rank()) % 97)
                                    : real.floats[static_cast<std::size_t>(i) % real.floats.size()];
        std::vector<float> buf(data.size());
        for (c::AccumMode m : c::kAccumModes) {
            if (!wanted(c::accum_mode_name(m))) continue;
            const c::AccumSpec spec = c::accum_spec(m, 7);
            const Timing t = time_it(w, reps, [&] {
                buf = data;
                w.allreduce(buf.data(), n, spec);
            });
            const double bytes = 4.0 * static_cast<double>(n);
            const double blocks = 2.0 * 4.0 * static_cast<double>((n + w.size() - 1) / w.size());
            const double moved = m == c::AccumMode::kAtomic ? bytes : blocks * (P - 1);
            print(w, c::accum_mode_name(m), n, t, moved, moved);
        }
        // The exact mode's own exchange: unrounded accumulators, integer sums.
        std::vector<c::ExactAcc> accs(static_cast<std::size_t>(n)), work(accs.size());
        for (int64_t i = 0; i < n; ++i) {
            c::ExactAcc& a = accs[static_cast<std::size_t>(i)];
            if (!real.exact.empty()) {
                a = real.exact[static_cast<std::size_t>(i) % real.exact.size()];
                continue;
            }
            c::exact_init(a);
            c::exact_add(a, data[static_cast<std::size_t>(i)]);
        }
        if (wanted("exact-accumulators")) {
            const Timing t = time_it(w, reps, [&] {
                work = accs;
                w.allreduce_exact(work.data(), n);
            });
            const double bytes = 44.0 * static_cast<double>(n);
            print(w, "exact-accumulators", n, t, bytes, bytes);
        }
        if (!wanted("exact-rounded")) continue;
        // The gradients' exchange: only the rounded sums (reduce-scatter, round, all-gather).
        int64_t handed = 0;
        const Timing tr = time_it(
            w, reps, [&] { handed = w.allreduce_exact_rounded(accs.data(), n, buf.data()); });
        const double moved = static_cast<double>(handed) * (P - 1) / P;
        print(w, "exact-rounded", n, tr, moved, moved);
    }
    return 0;
}
