// SPDX-License-Identifier: MIT
// End-to-end training step per model x --impl preset x thread count (issue 3's cost table, issue
// 5's step benchmark). One step = forward (training mode) -> softmax cross-entropy -> zero_grad ->
// backward -> Adam step, on a fixed synthetic batch (Philox pixels, labels i % classes), exactly
// the work of one step of `detrain train` minus data loading.
//
// Fair comparison on a noisy shared machine: every iteration runs one step under `fast` (the
// atomic baseline) and then one step under the preset, on two models initialised alike; the
// reported time is the preset's step. Counters: min_ms / fast_min_ms (fastest steps) and their
// ratio vs_fast; med_ms / fast_med_ms and med_vs_fast (medians). Ratios of adjacent steps are far
// steadier than absolute times when other processes share the cores.
//
// Shapes: kTrainStepShapes (bench/trainee.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/trainee.h"
#include "engine/autograd/tape.h"
#include "engine/noise/noise_config.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/softmax_xent.h"
#include "engine/optim/optimizer.h"
#include "engine/runtime/threads.h"
#include "kernels/common/philox.h"
#include "models/model.h"

namespace {

using dt::Tensor;
using dt::bench::preset_specs;
using dt::bench::Shape;
using dt::bench::Trainee;

double seconds_of(void (Trainee::*fn)(), Trainee& t, const dt::ReduceSiteSpecs& specs) {
    const dt::ScopedReduceConfig scope(specs);
    const auto t0 = std::chrono::steady_clock::now();
    (t.*fn)();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void train_step(benchmark::State& state, Shape shape, std::string preset) {
    const int saved_threads = dt::num_threads();
    dt::set_num_threads(static_cast<int>(state.range(0)));
    const dt::ReduceSiteSpecs fast = preset_specs("fast"), mine = preset_specs(preset);
    Trainee baseline(shape), trainee(shape);
    seconds_of(&Trainee::step, baseline, fast);  // warm-up: allocations, page faults
    seconds_of(&Trainee::step, trainee, mine);
    std::vector<double> t_fast, t_mine;
    for (auto _ : state) {
        t_fast.push_back(seconds_of(&Trainee::step, baseline, fast));
        t_mine.push_back(seconds_of(&Trainee::step, trainee, mine));
        state.SetIterationTime(t_mine.back());
    }
    const double min_fast = *std::min_element(t_fast.begin(), t_fast.end());
    const double min_mine = *std::min_element(t_mine.begin(), t_mine.end());
    state.counters["min_ms"] = min_mine * 1e3;
    state.counters["fast_min_ms"] = min_fast * 1e3;
    state.counters["vs_fast"] = min_mine / min_fast;
    state.counters["med_ms"] = median(t_mine) * 1e3;
    state.counters["fast_med_ms"] = median(t_fast) * 1e3;
    state.counters["med_vs_fast"] = median(t_mine) / median(t_fast);
    state.counters["img_per_s"] =
        benchmark::Counter(static_cast<double>(shape.batch) * static_cast<double>(t_mine.size()),
                           benchmark::Counter::kIsRate);
    dt::set_num_threads(saved_threads);
}

/// 2 threads against 1 on the deterministic preset, in alternating blocks: each iteration runs
/// kScalingSteps 1-thread steps and as many 2-thread steps (which first alternates), each block
/// after an untimed step
/// (a vCPU left idle by the 1-thread block first has to be won back from the host: the first
/// 2-thread step after one takes up to 2x as long). Two trainees, so each run's weights evolve
/// as in training. Counters: the median of the blocks' ratios (median 1-thread step / median
/// 2-thread step), their range, and each side's median step. Blocks a fraction of a second
/// apart see the same machine; separate runs minutes apart do not.
constexpr int kScalingSteps = 5;
void thread_scaling(benchmark::State& state, Shape shape) {
    const int saved_threads = dt::num_threads();
    const dt::ReduceSiteSpecs specs = preset_specs("deterministic");
    Trainee one(shape), two(shape);
    auto block = [&](Trainee& t, int threads, std::vector<double>& all) {
        dt::set_num_threads(threads);
        seconds_of(&Trainee::step, t, specs);
        std::vector<double> times;
        for (int i = 0; i < kScalingSteps; ++i)
            times.push_back(seconds_of(&Trainee::step, t, specs));
        all.insert(all.end(), times.begin(), times.end());
        return median(times);
    };
    std::vector<double> t1, t2, ratio;
    bool one_first = true;  // the order alternates, so that a drift favours neither side
    for (auto _ : state) {
        double one_med = 0, two_med = 0;
        if (one_first) {
            one_med = block(one, 1, t1), two_med = block(two, 2, t2);
        } else {
            two_med = block(two, 2, t2), one_med = block(one, 1, t1);
        }
        one_first = !one_first;
        ratio.push_back(one_med / two_med);
        state.SetIterationTime(kScalingSteps * (one_med + two_med));
    }
    state.counters["speedup"] = median(ratio);
    state.counters["speedup_lo"] = *std::min_element(ratio.begin(), ratio.end());
    state.counters["speedup_hi"] = *std::max_element(ratio.begin(), ratio.end());
    state.counters["t1_med_ms"] = median(t1) * 1e3;
    state.counters["t2_med_ms"] = median(t2) * 1e3;
    dt::set_num_threads(saved_threads);
}

const char* const kPresets[] = {"fast", "deterministic", "kahan", "exact", "exact-all"};

const int registered = [] {
    for (const Shape& s : dt::bench::kTrainStepShapes) {
        const std::string model = dt::bench::shape_name(s);
        for (const char* preset : kPresets) {
            benchmark::RegisterBenchmark(("BM_TrainStep/" + model + "/" + preset).c_str(),
                                         train_step, s, std::string(preset))
                ->ArgName("threads")
                ->Arg(1)
                ->Arg(2)
                ->Iterations(s.iterations)
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
    for (const Shape& s : dt::bench::kTrainStepShapes) {
        if (std::string(s.model) != "smallcnn" && std::string(s.model) != "smallcnn-bn") continue;
        benchmark::RegisterBenchmark(("BM_ThreadScaling/" + std::string(s.model)).c_str(),
                                     thread_scaling, s)
            ->Iterations(30)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    }
    return 0;
}();

}  // namespace
