// SPDX-License-Identifier: MIT
// Each op's CUDA kernels per accumulation mode of its sites: forward and backward of one engine
// op on the cuda device, timed with CUDA events on the engine's stream, the L2 cache flushed
// (a 256 MiB memset) before every timed run. Prints one JSON object per (op, shape, mode): the
// median forward and backward times (ms) over the repetitions and the backward's ratio to the
// atomic mode's. First, one large square GEMM per tile shape in TFLOP/s against the GPU's FP32
// peak (gemm_peak.h). Then conv.wgrad's and conv.dgrad's raw kernels per variant: the launcher's
// (tiled, then per element) and per element; for wgrad also exact computed with integer atomics
// on the accumulators' limbs (issue 20: measure it); with a bit check of each variant against
// its mode's launcher. Then the GEMM-shaped kernels with each tile shape of their block programs
// (tile_variants.h), an Adam step over all of ResNet-18's parameters in one call against one
// call per parameter (optimizer_variants.h), and the per-channel totals' staged leaves against a
// thread per row (channel_variants.h). For scripts/gpu_check.sh; without a GPU it says so and
// exits 2. --batch: the batch of every shape (128, the reference models'; scripts/emulate.sh runs
// the whole bench emulated at a batch of 2, for its harness and the variants' bit checks).
//   dt_gpu_kernel_bench [--reps N] [--budget-s S] [--batch B]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "bench/gpu/bench_main.h"
#include "bench/gpu/channel_variants.h"
#include "bench/gpu/gemm_peak.h"
#include "bench/gpu/kernel_bench_common.h"
#include "bench/gpu/optimizer_variants.h"
#include "bench/gpu/tile_variants.h"
#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/add.h"
#include "engine/ops/batchnorm2d.h"
#include "engine/ops/conv2d.h"
#include "engine/ops/dropout.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/linear.h"
#include "engine/ops/pool2d.h"
#include "engine/ops/relu.h"
#include "engine/ops/softmax_xent.h"
#include "engine/runtime/cuda_device.h"
#include "kernels/common/philox.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/gemm.h"

namespace {

using dt::Device;
using dt::Tensor;
using dt::bench::dims;
using dt::bench::median;
using dt::bench::median_time;
using dt::bench::Timer;
using dt::bench::uniform;
namespace kc = dt::kernels::common;

struct Case {
    std::string op, shape;
    std::function<Tensor()> forward;  // builds the op's output (recording its backward)
};

/// The ops' cases at batch n (128: the reference models' batch).
std::vector<Case> cases(int64_t n) {
    std::vector<Case> c;
    // SmallCNN's second convolution and ResNet-18's layer3 convolution.
    const Tensor x1 = uniform({n, 16, 14, 14}, 1), w1 = uniform({32, 16, 3, 3}, 2),
                 b1 = uniform({32}, 3);
    c.push_back({"conv2d", dims({n, 16, 14, 14}) + " k3 co32", [=] {
                     return dt::conv2d(x1, w1, b1, {1, 1});
                 }});
    const Tensor x2 = uniform({n, 256, 8, 8}, 4), w2 = uniform({256, 256, 3, 3}, 5);
    c.push_back({"conv2d", dims({n, 256, 8, 8}) + " k3 co256", [=] {
                     return dt::conv2d(x2, w2, Tensor(), {1, 1});
                 }});
    const Tensor xl = uniform({n, 1568}, 6), wl = uniform({32, 1568}, 7), bl = uniform({32}, 8);
    c.push_back({"linear", dims({n, 1568}) + " -> 32", [=] { return dt::linear(xl, wl, bl); }});
    const Tensor xb = uniform({n, 32, 14, 14}, 9), g = uniform({32}, 10), be = uniform({32}, 11);
    c.push_back({"batchnorm2d", dims({n, 32, 14, 14}), [=] {
                     Tensor rm = Tensor::zeros({32}, dt::DType::kF32, Device::kCuda);
                     Tensor rv = Tensor::full({32}, 1.0f, Device::kCuda);
                     return dt::batchnorm2d(xb, g, be, rm, rv, {true, 0.1f, 1e-5f});
                 }});
    // A GPT block's layer norm: n sequences of 64 tokens, C = 192 (8192 tokens at n = 128).
    const Tensor xn = uniform({n, 64, 192}, 17), gn = uniform({192}, 18), bn = uniform({192}, 19);
    c.push_back({"layer_norm", dims({n, 64, 192}), [=] { return dt::layer_norm(xn, gn, bn, 64); }});
    const Tensor xp = uniform({n, 16, 28, 28}, 12);
    const std::string xp_dims = dims({n, 16, 28, 28});
    c.push_back({"maxpool2d", xp_dims + " 2x2", [=] { return dt::maxpool2d(xp, {2, 2, 0}); }});
    c.push_back({"maxpool2d", xp_dims + " 3x3 s1", [=] { return dt::maxpool2d(xp, {3, 1, 1}); }});
    // The elementwise ops and the other pools (one mode matters only where a site is involved:
    // pool.backward for the pools; relu, add and dropout have no reduction and show every mode
    // alike, which is a check of the bench itself).
    c.push_back({"relu_maxpool2d", xp_dims + " 2x2", [=] {
                     return dt::relu_maxpool2d(xp, {2, 2, 0});
                 }});
    c.push_back({"avgpool2d", xp_dims + " 3x3 s1", [=] { return dt::avgpool2d(xp, {3, 1, 1}); }});
    const Tensor xg = uniform({n, 512, 4, 4}, 14);
    c.push_back({"global_avgpool", dims({n, 512, 4, 4}), [=] { return dt::global_avgpool(xg); }});
    c.push_back({"relu", xp_dims, [=] { return dt::relu(xp); }});
    const Tensor xa = uniform({n, 16, 28, 28}, 15);
    c.push_back({"add", xp_dims, [=] { return dt::add(xp, xa); }});
    std::vector<int64_t> ids(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
    const Tensor xd = uniform({n, 1568}, 16);
    c.push_back({"dropout", dims({n, 1568}) + " p0.5", [=] {
                     return dt::dropout(xd, 0.5f, true, dt::DropoutKey{7, 0, 0, ids});
                 }});
    const Tensor logits = uniform({n, 10}, 13);
    std::vector<int64_t> lab(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) lab[static_cast<std::size_t>(i)] = i % 10;
    const Tensor labels = Tensor::from_vector_i64({n}, lab).to(Device::kCuda);
    c.push_back({"softmax_cross_entropy", dims({n, 10}),
                 [=] { return dt::softmax_cross_entropy(logits, labels); }});
    // The GPT model's token embedding: n / 4 sequences of 256 bytes (32 at the default batch),
    // V = 256, C = 192, ids skewed like text (floor(256 u^3)).
    const int64_t seqs = std::max<int64_t>(n / 4, 1), T = 256;
    std::vector<int64_t> tok(static_cast<std::size_t>(seqs * T));
    for (std::size_t m = 0; m < tok.size(); ++m) {
        const double u = static_cast<double>((m * 2654435761u) % 1000003u) / 1000003.0;
        tok[m] = static_cast<int64_t>(256.0 * u * u * u);
    }
    const Tensor tokens = Tensor::from_vector_i64({seqs, T}, tok).to(Device::kCuda);
    const Tensor table = uniform({256, 192}, 17);
    c.push_back({"embedding", dims({seqs, T}) + " V256 C192",
                 [=] { return dt::embedding(tokens, table, T); }});
    return c;
}

/// conv.wgrad's and conv.dgrad's raw kernels (kernels/conv2d.h, cuda::) per variant: each mode
/// as the launcher runs it (wgrad: tiled leaves, then their combination per element; dgrad on
/// these 3x3 'same' shapes: the transposed forward, in the tree mode one chain, in the exact mode
/// cut per tap and folded per element, in the atomic mode split per kernel row and atomic-added)
/// and per element (one thread computing all its values where it needs them); for dgrad also
/// through the per-tap values (tiled into a buffer, then summed per element: "-taps", the
/// launcher's way until this version and still on other shapes); for wgrad also the exact mode
/// computed with integer atomics on the limbs (a group of samples' per-sample chains folded
/// exactly per output in double, the double added into the accumulators, as atomic adds its
/// group chains). Their medians, ratios to the
/// launcher's atomic mode, and whether each variant gave its mode's bits (the launcher's) on
/// this GPU.
void conv_variants(Timer& timer, int reps, int64_t n) {
    namespace cu = dt::kernels::cuda;
    using Kernel = void (*)(const float*, const float*, float*, const dt::kernels::Conv2dParams&);
    struct Variant {
        const char* name;
        kc::AccumMode mode;
        Kernel kernel;
        int same_as;  // the variant whose bits it must give, or -1
    };
    const Variant wgrad[] = {
        {"atomic", kc::AccumMode::kAtomic, cu::conv2d_backward_weight, -1},
        {"tree", kc::AccumMode::kTree, cu::conv2d_backward_weight, -1},
        {"tree-per-element", kc::AccumMode::kTree, cu::conv2d_backward_weight_per_element, 1},
        {"exact", kc::AccumMode::kExact, cu::conv2d_backward_weight, -1},
        {"exact-per-element", kc::AccumMode::kExact, cu::conv2d_backward_weight_per_element, 3},
        {"exact-limb-atomics", kc::AccumMode::kExact, cu::conv2d_backward_weight_exact_limbs, 3}};
    const Variant dgrad[] = {
        {"atomic", kc::AccumMode::kAtomic, cu::conv2d_backward_data, -1},
        {"atomic-taps", kc::AccumMode::kAtomic, cu::conv2d_backward_data_taps, -1},
        {"atomic-per-element", kc::AccumMode::kAtomic, cu::conv2d_backward_data_per_element, -1},
        {"tree", kc::AccumMode::kTree, cu::conv2d_backward_data, -1},
        {"exact", kc::AccumMode::kExact, cu::conv2d_backward_data, -1},
        {"exact-taps", kc::AccumMode::kExact, cu::conv2d_backward_data_taps, 4},
        {"exact-per-element", kc::AccumMode::kExact, cu::conv2d_backward_data_per_element, 4}};
    struct Site {
        const char* name;
        const Variant* variants;
        int count;
    };
    const Site sites[] = {{"conv.wgrad kernel", wgrad, static_cast<int>(std::size(wgrad))},
                          {"conv.dgrad kernel", dgrad, static_cast<int>(std::size(dgrad))}};
    const dt::Shape shapes[][2] = {{{n, 16, 14, 14}, {32, 16, 3, 3}},
                                   {{n, 256, 8, 8}, {256, 256, 3, 3}}};
    // "exact" is the launcher's leaves' way whatever DT_CUDA_EXACT_WGRAD says.
    const cu::ExactWgradWay way = cu::exact_wgrad_way();
    cu::set_exact_wgrad_way(cu::ExactWgradWay::kLeaves);
    for (const auto& s : shapes) {
        const Tensor x = uniform(s[0], 21), w = uniform(s[1], 22);
        dt::kernels::Conv2dParams p{s[0][0], s[0][1], s[0][2], s[0][3], s[1][0], 3, 3, 1, 1};
        p.ho = p.h, p.wo = p.w;
        const Tensor dy = uniform({p.n, p.co, p.ho, p.wo}, 23);
        for (const Site& site : sites) {
            const bool is_wgrad = site.variants == wgrad;
            Tensor out = Tensor::empty(is_wgrad ? s[1] : s[0], dt::DType::kF32, Device::kCuda);
            const float* a = is_wgrad ? x.f32() : dy.f32();
            const float* b = is_wgrad ? dy.f32() : w.f32();
            std::vector<double> ms(static_cast<std::size_t>(site.count));
            std::vector<std::vector<float>> bits(static_cast<std::size_t>(site.count));
            for (int v = 0; v < site.count; ++v) {
                p.accum = kc::accum_spec(site.variants[v].mode);
                ms[v] =
                    median_time(timer, reps, [&] { site.variants[v].kernel(a, b, out.f32(), p); });
                bits[v] = out.to_vector();
            }
            for (int v = 0; v < site.count; ++v) {
                const Variant& var = site.variants[v];
                std::string check;
                if (var.same_as >= 0) {
                    const std::vector<float>& want = bits[var.same_as];
                    const bool same =
                        std::memcmp(bits[v].data(), want.data(), want.size() * 4) == 0;
                    check = std::string(", \"bits_equal_") + site.variants[var.same_as].name +
                            "\": " + (same ? "true" : "false");
                }
                std::printf(
                    "{\"op\": \"%s\", \"shape\": \"%s k3 co%lld\", \"variant\": \"%s\", "
                    "\"ms\": %.4f, \"vs_atomic\": %.3f%s}\n",
                    site.name, dims({p.n, p.ci, p.h, p.w}).c_str(), static_cast<long long>(p.co),
                    var.name, ms[v], ms[v] / ms[0], check.c_str());
            }
            std::fflush(stdout);
        }
    }
    cu::set_exact_wgrad_way(way);
}

int run(int argc, char** argv) {
    int reps = 7;
    double budget = 60;
    int64_t batch = 128;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--reps" && i + 1 < argc)
            reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--budget-s" && i + 1 < argc)
            budget = std::atof(argv[++i]);
        else if (a == "--batch" && i + 1 < argc)
            batch = std::max<int64_t>(1, std::atoll(argv[++i]));
        else {
            std::fprintf(stderr,
                         "usage: dt_gpu_kernel_bench [--reps N] [--budget-s S] [--batch B]\n");
            return 2;
        }
    }
    std::string why;
    if (!dt::cuda_device::available(&why)) {
        std::fprintf(stderr, "dt_gpu_kernel_bench: %s\n", why.c_str());
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    Timer timer;
    dt::bench::gemm_peak(timer, reps, batch);  // the tiles' efficiency, apart from any recipe
    conv_variants(timer, reps, batch);         // next: the budget cuts the op cases, not these
    dt::bench::tile_variants(timer, reps, batch);
    optimizer_variants(timer, reps);
    channel_variants(timer, reps, batch);
    const kc::AccumSpec modes[] = {
        kc::accum_spec(kc::AccumMode::kAtomic), kc::accum_spec(kc::AccumMode::kTree),
        kc::accum_spec(kc::AccumMode::kKahan), kc::accum_spec(kc::AccumMode::kExact),
        kc::accum_spec(kc::AccumMode::kPermuted, 1)};
    for (const Case& c : cases(batch)) {
        double atomic_backward = 0;
        for (const kc::AccumSpec& spec : modes) {
            const char* mode = kc::accum_mode_name(spec.mode);
            if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
                budget) {
                std::printf(
                    "{\"op\": \"%s\", \"shape\": \"%s\", \"mode\": \"%s\", \"skipped\": "
                    "\"budget\"}\n",
                    c.op.c_str(), c.shape.c_str(), mode);
                continue;
            }
            std::vector<double> fw, bw;
            for (int r = 0; r <= reps; ++r) {  // the first run warms up (block cache, JIT)
                const dt::ScopedReduceConfig scope(spec);
                Tensor y;
                timer.flush_l2();
                const double f = timer.time([&] { y = c.forward(); });
                const Tensor dy = Tensor::full(y.shape(), 0.5f, Device::kCuda);
                timer.flush_l2();
                const double b = timer.time([&] { y.impl().grad_fn->backward(dy); });
                dt::autograd::clear_tape();
                if (r > 0) fw.push_back(f), bw.push_back(b);
            }
            const double mb = median(bw);
            if (spec.mode == kc::AccumMode::kAtomic) atomic_backward = mb;
            std::printf(
                "{\"op\": \"%s\", \"shape\": \"%s\", \"mode\": \"%s\", \"forward_ms\": "
                "%.4f, \"backward_ms\": %.4f, \"backward_vs_atomic\": %.3f}\n",
                c.op.c_str(), c.shape.c_str(), mode, median(fw), mb,
                atomic_backward > 0 ? mb / atomic_backward : 0.0);
            std::fflush(stdout);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return dt::bench::run_main("dt_gpu_kernel_bench", run, argc, argv);
}
