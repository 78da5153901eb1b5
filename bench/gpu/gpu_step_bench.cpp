// SPDX-License-Identifier: MIT
// Training-step time on the cuda device per model x --impl preset, against the atomic baseline
// (`fast`) in the same run: every iteration runs one step under `fast` and one under the preset,
// on two models initialised alike, each timed from a device synchronisation to the next (the step
// is a sequence of kernels and a few small copies; CUDA events around it would time the same
// span). The step is the trainer's whole step (bench/trainee.h, trainer_checks): its two waits
// for the device, the loss's divergence check and the tape's finite check, included. Prints one
// JSON object per case: median and minimum step (ms), the baseline's, their ratios, images per
// second. For scripts/gpu_check.sh and the targets of issue 20 (deterministic <= 1.10x and exact
// <= 1.3x atomic). A preset named "P@limbs" is P with conv.wgrad's exact mode computed with limb
// atomics (kernels/cuda/runtime.h: ExactWgradWay), "P@small" P with every GEMM-shaped kernel on
// the small tile (TileChoice::kSmall, instead of the automatic choice of the tiny, small or large
// tile); the same bits. --profile: after each case one more step with the launch profile on
// (kernels/cuda/runtime.h), printed as {"op": "profile", ...}: where the step's time on the
// device goes, kernel by kernel. Without a GPU it says so and exits 2.
//   dt_gpu_step_bench [--models smallcnn,smallcnn-bn,resnet18] [--presets fast,deterministic,
//                      deterministic@small,exact,exact@limbs,exact-all,exact-all@limbs]
//                     [--steps N] [--budget-s S] [--profile]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/gpu/bench_main.h"
#include "bench/trainee.h"
#include "engine/core/error.h"
#include "engine/core/text.h"
#include "engine/runtime/cuda_device.h"
#include "kernels/cuda/runtime.h"

namespace {

using dt::bench::Shape;
using dt::bench::Trainee;
using Clock = std::chrono::steady_clock;

const Shape kShapes[] = {
    {"smallcnn", 3, 1, 28, 128, 0},
    {"smallcnn-bn", 3, 1, 28, 128, 0},
    {"mediumcnn", 3, 3, 32, 64, 0},
    {"resnet18", 3, 3, 32, 128, 0},
};

namespace cu = dt::kernels::cuda;

/// The kernels' ways a case runs with (the same bits in every way).
struct Ways {
    cu::ExactWgradWay wgrad;
    cu::TileChoice tile;

    /// The process's ways (its environment's DT_CUDA_EXACT_WGRAD and DT_CUDA_TILE).
    static Ways of_process() { return Ways{cu::exact_wgrad_way(), cu::tile_choice()}; }
    void set() const {
        cu::set_exact_wgrad_way(wgrad);
        cu::set_tile_choice(tile);
    }
};

/// The kernels run `ways` while in scope; the process's ways are back afterwards.
class ScopedWays {
 public:
    explicit ScopedWays(const Ways& ways) : process_(Ways::of_process()) { ways.set(); }
    ~ScopedWays() { process_.set(); }
    ScopedWays(const ScopedWays&) = delete;
    ScopedWays& operator=(const ScopedWays&) = delete;

 private:
    Ways process_;
};

/// One step of t under `specs`, the kernels run `ways`.
double timed_step(Trainee& t, const dt::ReduceSiteSpecs& specs,
                  const Ways& ways = Ways::of_process()) {
    const dt::ScopedReduceConfig scope(specs);
    const ScopedWays running(ways);
    dt::cuda_device::synchronize();
    const Clock::time_point t0 = Clock::now();
    t.step();
    dt::cuda_device::synchronize();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// One more step of t under `specs` and `ways` with the launch profile on (runtime.h): prints
/// {"op": "profile", ...}: the step's launches, their total time on the stream and the kernels
/// that took most of it, each with its launches and time (ms), the most first.
void print_profile(Trainee& t, const dt::ReduceSiteSpecs& specs, const Ways& ways,
                   const std::string& model, const std::string& preset) {
    std::vector<cu::LaunchTime> launches;
    {
        const dt::ScopedReduceConfig scope(specs);
        const ScopedWays running(ways);
        dt::cuda_device::synchronize();
        cu::start_launch_profile(/*hold_ms=*/20);  // the step's launches queue up behind the hold
        t.step();
        launches = cu::take_launch_profile();
    }
    struct Kernel {
        std::string name;
        int launches = 0;
        double ms = 0;
    };
    std::vector<Kernel> kernels;
    double total = 0;
    for (const cu::LaunchTime& l : launches) {
        auto k = std::find_if(kernels.begin(), kernels.end(),
                              [&](const Kernel& x) { return x.name == l.name; });
        if (k == kernels.end()) k = kernels.insert(kernels.end(), Kernel{l.name});
        ++k->launches;
        k->ms += l.ms;
        total += l.ms;
    }
    std::sort(kernels.begin(), kernels.end(),
              [](const Kernel& a, const Kernel& b) { return a.ms > b.ms; });
    std::string list;
    for (std::size_t i = 0; i < kernels.size() && i < 15; ++i)
        list += (i ? ", " : "") + std::string("{\"kernel\": \"") + kernels[i].name +
                "\", \"launches\": " + std::to_string(kernels[i].launches) +
                ", \"ms\": " + std::to_string(kernels[i].ms) + "}";
    std::printf(
        "{\"op\": \"profile\", \"model\": \"%s\", \"preset\": \"%s\", \"launches\": %zu, "
        "\"total_ms\": %.4f, \"kernels\": [%s]}\n",
        model.c_str(), preset.c_str(), launches.size(), total, list.c_str());
    std::fflush(stdout);
}

/// The preset of a case name, "P", "P@limbs" (ways->wgrad: kLimbAtomics) or "P@small"
/// (ways->tile: kSmall); "" for another suffix. *ways starts as the process's.
std::string preset_and_ways(const std::string& name, Ways* ways) {
    const std::size_t at = name.find('@');
    if (at == std::string::npos) return name;
    if (name.substr(at) == "@limbs") {
        ways->wgrad = cu::ExactWgradWay::kLimbAtomics;
    } else if (name.substr(at) == "@small") {
        ways->tile = cu::TileChoice::kSmall;
    } else {
        return "";
    }
    return name.substr(0, at);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(int argc, char** argv) {
    std::vector<std::string> models = {"smallcnn", "smallcnn-bn", "resnet18"};
    std::vector<std::string> presets = {"fast",           "deterministic", "deterministic@small",
                                        "exact",          "exact@limbs",   "exact-all",
                                        "exact-all@limbs"};
    int steps = 20;
    double budget = 120;
    bool profile = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (a == "--models" && has)
            models = dt::split_text(argv[++i], ',');
        else if (a == "--presets" && has)
            presets = dt::split_text(argv[++i], ',');
        else if (a == "--steps" && has)
            steps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--budget-s" && has)
            budget = std::atof(argv[++i]);
        else if (a == "--profile")
            profile = true;
        else {
            std::fprintf(stderr,
                         "usage: dt_gpu_step_bench [--models a,b] [--presets a,b] "
                         "[--steps N] [--budget-s S] [--profile]\n");
            return 2;
        }
    }
    for (const std::string& preset : presets) {
        Ways ways = Ways::of_process();
        if (preset_and_ways(preset, &ways).empty()) {
            std::fprintf(stderr, "dt_gpu_step_bench: %s: the ways after @ are limbs and small\n",
                         preset.c_str());
            return 2;
        }
    }
    std::string why;
    if (!dt::cuda_device::available(&why)) {
        std::fprintf(stderr, "dt_gpu_step_bench: %s\n", why.c_str());
        return 2;
    }
    std::fprintf(stderr, "dt_gpu_step_bench on %s\n", dt::cuda_device::describe().c_str());
    const Clock::time_point start = Clock::now();
    for (const std::string& model : models) {
        const Shape* shape = nullptr;
        for (const Shape& s : kShapes)
            if (model == s.model) shape = &s;
        if (shape == nullptr) {
            std::fprintf(stderr, "dt_gpu_step_bench: unknown model %s\n", model.c_str());
            return 2;
        }
        const dt::ReduceSiteSpecs fast = dt::bench::preset_specs("fast");
        for (const std::string& preset : presets) {
            if (std::chrono::duration<double>(Clock::now() - start).count() > budget) {
                std::printf("{\"model\": \"%s\", \"preset\": \"%s\", \"skipped\": \"budget\"}\n",
                            model.c_str(), preset.c_str());
                continue;
            }
            Ways ways = Ways::of_process();
            const dt::ReduceSiteSpecs mine =
                dt::bench::preset_specs(preset_and_ways(preset, &ways));
            Trainee base(*shape, dt::Device::kCuda), trainee(*shape, dt::Device::kCuda);
            base.trainer_checks = trainee.trainer_checks = true;  // the trainer's whole step
            timed_step(base, fast);  // warm-up: allocations (the block cache), first launches
            timed_step(trainee, mine, ways);
            std::vector<double> tf, tm;
            for (int k = 0; k < steps; ++k) {
                tf.push_back(timed_step(base, fast));
                tm.push_back(timed_step(trainee, mine, ways));
            }
            const double mf = median(tf), mm = median(tm);
            std::printf(
                "{\"model\": \"%s\", \"preset\": \"%s\", \"batch\": %d, \"steps\": %d, "
                "\"med_ms\": %.4f, \"min_ms\": %.4f, \"fast_med_ms\": %.4f, "
                "\"med_vs_fast\": %.4f, \"min_vs_fast\": %.4f, \"img_per_s\": %.1f}\n",
                model.c_str(), preset.c_str(), shape->batch, steps, mm * 1e3,
                *std::min_element(tm.begin(), tm.end()) * 1e3, mf * 1e3, mm / mf,
                *std::min_element(tm.begin(), tm.end()) / *std::min_element(tf.begin(), tf.end()),
                shape->batch / mm);
            std::fflush(stdout);
            if (profile) print_profile(trainee, mine, ways, model, preset);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return dt::bench::run_main("dt_gpu_step_bench", run, argc, argv);
}
