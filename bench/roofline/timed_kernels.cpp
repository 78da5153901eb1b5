// SPDX-License-Identifier: MIT
// TimedCpuKernels (timed_kernels.h): one wrapper per entry point of kernels/op_list.inc, each a
// plain function (the table holds function pointers) that reads the clock, calls the CPU kernel
// and records the call. Calls come from the thread that runs the ops; kernels run their own
// threads inside the call.
#include "bench/roofline/timed_kernels.h"

#include <chrono>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "engine/core/backend.h"

namespace dt::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<KernelCall>& calls() {
    static std::vector<KernelCall> all;
    return all;
}

std::string cross(std::initializer_list<int64_t> dims) {
    std::string s;
    for (int64_t d : dims) {
        if (!s.empty()) s += 'x';
        s += std::to_string(d);
    }
    return s;
}

/// Output positions along one axis whose tap k reads inside the input (not the padding).
int64_t inside(int64_t k, int64_t out, int64_t in, int64_t stride, int64_t pad) {
    int64_t n = 0;
    for (int64_t o = 0; o < out; ++o) n += (o * stride - pad + k >= 0 && o * stride - pad + k < in);
    return n;
}

/// What a call says about itself, from its last argument (its params).
void describe(KernelCall& c, const kernels::Conv2dParams& p) {
    c.layer = cross({p.n, p.ci, p.h, p.w}) + ">" + std::to_string(p.co) + " k" +
              cross({p.kh, p.kw}) + "/" + std::to_string(p.stride);
    // Multiply-adds of taps over the padding multiply by zero: not work, so not counted.
    int64_t taps = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t kx = 0; kx < p.kw; ++kx)
            taps += inside(ky, p.ho, p.h, p.stride, p.pad) * inside(kx, p.wo, p.w, p.stride, p.pad);
    c.flops = 2.0 * static_cast<double>(p.n * p.co * p.ci * taps);
    c.bytes = 4.0 * static_cast<double>(p.n * p.ci * p.h * p.w + p.co * p.ci * p.kh * p.kw +
                                        p.n * p.co * p.ho * p.wo);
    if (c.id != kernels::KernelId::conv2d_forward)
        c.mode = kernels::common::accum_mode_name(p.accum.mode);
}
void describe(KernelCall& c, const kernels::LinearParams& p) {
    c.layer = cross({p.n, p.in}) + ">" + std::to_string(p.out);
    c.flops = 2.0 * static_cast<double>(p.n * p.in * p.out);
    c.bytes = 4.0 * static_cast<double>(p.n * p.in + p.out * p.in + p.n * p.out);
    if (c.id != kernels::KernelId::linear_forward)
        c.mode = kernels::common::accum_mode_name(p.accum.mode);
}
template <class T>
void describe(KernelCall&, const T&) {}

template <kernels::KernelId Id, class F>
struct Timed;

template <kernels::KernelId Id, class R, class... A>
struct Timed<Id, R (*)(A...)> {
    static inline R (*inner)(A...) = nullptr;

    static void record(Clock::time_point t0, const std::tuple<A...>& args) {
        KernelCall c;
        c.id = Id;
        c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        if constexpr (sizeof...(A) > 0) describe(c, std::get<sizeof...(A) - 1>(args));
        calls().push_back(std::move(c));
    }

    static R call(A... a) {
        const Clock::time_point t0 = Clock::now();
        if constexpr (std::is_void_v<R>) {
            inner(a...);
            record(t0, std::tuple<A...>(a...));
        } else {
            R r = inner(a...);
            record(t0, std::tuple<A...>(a...));
            return r;
        }
    }
};

kernels::KernelTable timed_table() {
    const kernels::KernelTable& cpu = kernels::cpu::kernel_table();
    kernels::KernelTable t = cpu;
    t.device = "cpu (timed)";
#define DT_KERNEL(op, entry)                                                            \
    Timed<kernels::KernelId::entry, decltype(&kernels::cpu::entry)>::inner = cpu.entry; \
    t.entry = &Timed<kernels::KernelId::entry, decltype(&kernels::cpu::entry)>::call;
#include "kernels/op_list.inc"
#undef DT_KERNEL
    return t;
}

}  // namespace

struct TimedCpuKernels::Scope {
    kernels::KernelTable table = timed_table();
    ScopedKernelTable scoped{Device::kCpu, table};
};

TimedCpuKernels::TimedCpuKernels() : scope_(std::make_unique<Scope>()) { calls().clear(); }

TimedCpuKernels::~TimedCpuKernels() = default;

std::vector<KernelCall> TimedCpuKernels::take() {
    std::vector<KernelCall> out;
    out.swap(calls());
    return out;
}

}  // namespace dt::bench
