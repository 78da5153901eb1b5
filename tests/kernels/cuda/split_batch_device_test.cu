// SPDX-License-Identifier: MIT
// The CUDA launchers for a part of a split batch (engine/runtime/batch_split.h) against the CPU
// kernels given the same part, on a GPU: the exact sites' unrounded sums added to accumulators
// in device memory (conv.wgrad, linear.wgrad, bias.grad, the exact_dgamma/dbeta of bn.backward
// and ln.grad; ln.grad's parts, rounded once, give the whole batch's bits), and
// batch norm's hook, whose completion goes through the host (channel_totals.cuh): a stand-in
// hook adds another part's totals, taken from the CPU, so that both devices complete the same
// totals. Every output bit for bit, in the exact and tree modes. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "kernels/batchnorm2d.h"
#include "kernels/bias_add.h"
#include "kernels/common/philox.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/runtime.h"
#include "kernels/layer_norm.h"
#include "kernels/linear.h"
#include "tests/support/gpu_test.h"

namespace dt::kernels {
namespace {

namespace c = common;
namespace dc = cuda;

std::vector<float> uniform(int64_t n, uint32_t tag) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = 2.0f * c::uniform01(c::philox_draw(11, c::RngStream::kTest, i, tag).v[0]) - 1.0f;
    return v;
}

/// A device copy of host data, freed at the end of the scope.
template <class T>
struct Dev {
    T* p = nullptr;
    std::size_t n = 0;
    explicit Dev(const std::vector<T>& h) : n(h.size()) {
        p = static_cast<T*>(dc::device_malloc(sizeof(T) * (n > 0 ? n : 1)));
        dc::copy_from_host(p, h.data(), sizeof(T) * n);
    }
    ~Dev() { dc::device_free(p); }
    std::vector<T> host() const {
        std::vector<T> h(n);
        dc::copy_to_host(h.data(), p, sizeof(T) * n);
        return h;
    }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

std::vector<float> rounded(const std::vector<c::ExactAcc>& a) {
    std::vector<float> v;
    for (const c::ExactAcc& e : a) v.push_back(c::exact_value(e));
    return v;
}

std::vector<c::ExactAcc> zero_accs(int64_t n) {
    std::vector<c::ExactAcc> a(static_cast<std::size_t>(n));
    c::exact_init_row(a.data(), n);
    return a;
}

/// run(accs, on_device) adds a part's exact sums to `accs` with the cpu or the cuda kernel; both
/// start from the same accumulators (an earlier part's sums in element 0) and must round alike.
template <class Run>
void expect_same_sums(const char* site, int64_t n, const Run& run) {
    std::vector<c::ExactAcc> want = zero_accs(n);
    c::exact_add(want[0], 0.75f);
    const Dev<c::ExactAcc> accs(want);
    run(want.data(), false);
    run(accs.p, true);
    EXPECT_TRUE(same_bits(rounded(accs.host()), rounded(want))) << site;
}

TEST(SplitBatchDevice, ExactSumsOfAPartAddToDeviceAccumulators) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const c::AccumSpec exact = c::accum_spec(c::AccumMode::kExact);
    Conv2dParams cp{
        .n = 5, .ci = 3, .h = 6, .w = 6, .co = 4, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    cp.ho = 6, cp.wo = 6;
    cp.accum = exact;
    const std::vector<float> x = uniform(5 * 3 * 36, 1), dy = uniform(5 * 4 * 36, 2);
    const Dev<float> dx(x), ddy(dy);
    using Wgrad = void (*)(const float*, const float*, float*, const Conv2dParams&);
    const std::pair<const char*, Wgrad> ways[] = {
        {"conv.wgrad", dc::conv2d_backward_weight},
        {"conv.wgrad, limb atomics", dc::conv2d_backward_weight_exact_limbs}};
    for (const auto& way : ways) {
        const Wgrad device_wgrad = way.second;
        expect_same_sums(way.first, 4 * 3 * 9, [&](c::ExactAcc* out, bool dev) {
            Conv2dParams q = cp;
            q.exact_out = out;
            if (dev)
                device_wgrad(dx.p, ddy.p, nullptr, q);
            else
                cpu::conv2d_backward_weight(x.data(), dy.data(), nullptr, q);
        });
    }
    const std::vector<float> lx = uniform(7 * 9, 3), ldy = uniform(7 * 4, 4);
    const Dev<float> dlx(lx), dldy(ldy);
    expect_same_sums("linear.wgrad", 4 * 9, [&](c::ExactAcc* out, bool dev) {
        LinearParams q{7, 9, 4};
        q.accum = exact;
        q.exact_out = out;
        if (dev)
            dc::linear_backward_weight(dlx.p, dldy.p, nullptr, q);
        else
            cpu::linear_backward_weight(lx.data(), ldy.data(), nullptr, q);
    });
    expect_same_sums("bias.grad", 4, [&](c::ExactAcc* out, bool dev) {
        BiasAddParams q{5, 4, 36};
        q.accum = exact;
        q.exact_out = out;
        if (dev)
            dc::bias_add_backward(ddy.p, nullptr, q);
        else
            cpu::bias_add_backward(dy.data(), nullptr, q);
    });
    EXPECT_EQ(dc::take_error(), "");
}

TEST(SplitBatchDevice, LayerNormPartsAddUpToTheWholeBatch) {
    // ln.grad exact: sequences [0, 1), [1, 4), [4, 7) of 5 tokens, C = 45, as parts adding to
    // one pair of device accumulators, dgamma and dbeta unwritten (null): rounded, the whole
    // batch's CPU bits. dx per token: the parts' rows are the whole's.
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    LayerNormParams p{.M = 35, .C = 45, .T = 5};
    p.accum = c::accum_spec(c::AccumMode::kExact);
    const int64_t C = p.C, row = p.T * C;
    std::vector<float> x = uniform(p.M * C, 5);
    for (float& v : x) v += 100.0f;  // a large offset: each part's rounding is not the whole's
    const std::vector<float> dy = uniform(p.M * C, 6), gamma = uniform(C, 7), beta = uniform(C, 8);
    std::vector<float> y(x.size()), mean(p.M), rstd(p.M), dx(x.size()), dgamma(C), dbeta(C);
    cpu::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                            p);
    cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(), dx.data(),
                             dgamma.data(), dbeta.data(), p);
    const Dev<float> dev_x(x), dev_dy(dy), dev_gamma(gamma), dev_mean(mean), dev_rstd(rstd),
        dev_dx(std::vector<float>(x.size(), 9.0f));
    const Dev<c::ExactAcc> acc_g(zero_accs(C)), acc_b(zero_accs(C));
    for (const auto& [lo, hi] : {std::pair{0, 1}, std::pair{1, 4}, std::pair{4, 7}}) {
        LayerNormParams q = p;
        q.M = (hi - lo) * p.T, q.exact_dgamma = acc_g.p, q.exact_dbeta = acc_b.p;
        dc::layer_norm_backward(dev_dy.p + lo * row, dev_x.p + lo * row, dev_mean.p + lo * p.T,
                                dev_rstd.p + lo * p.T, dev_gamma.p, dev_dx.p + lo * row, nullptr,
                                nullptr, q);
    }
    EXPECT_TRUE(same_bits(rounded(acc_g.host()), dgamma)) << "dgamma";
    EXPECT_TRUE(same_bits(rounded(acc_b.host()), dbeta)) << "dbeta";
    EXPECT_TRUE(same_bits(dev_dx.host(), dx)) << "dx";
    EXPECT_EQ(dc::take_error(), "");
}

/// The stand-in hook: adds the other part's totals (recorded from the CPU) to this part's.
struct OtherPart {
    std::vector<c::ExactAcc> accs;  // per call, in call order
    std::vector<float> totals;
    std::size_t at = 0;
    static void exact(void* ctx, c::ExactAcc* a, int64_t n) {
        auto* o = static_cast<OtherPart*>(ctx);
        for (int64_t k = 0; k < n; ++k) c::exact_merge(a[k], o->accs[o->at++]);
    }
    static void floats(void* ctx, float* t, int64_t n, const c::AccumSpec&) {
        auto* o = static_cast<OtherPart*>(ctx);
        for (int64_t k = 0; k < n; ++k) t[k] = t[k] + o->totals[o->at++];
    }
};

/// A hook that records what a part hands it (the other part's side of OtherPart).
struct Recorder {
    OtherPart* into;
    static void exact(void* ctx, c::ExactAcc* a, int64_t n) {
        auto* r = static_cast<Recorder*>(ctx);
        r->into->accs.insert(r->into->accs.end(), a, a + n);
    }
    static void floats(void* ctx, float* t, int64_t n, const c::AccumSpec&) {
        auto* r = static_cast<Recorder*>(ctx);
        r->into->totals.insert(r->into->totals.end(), t, t + n);
    }
};

TEST(SplitBatchDevice, BatchNormPartsCompleteTheirTotalsThroughTheHost) {
    DT_SKIP_WITHOUT_CUDA_DEVICE();
    const int64_t NA = 5, NB = 3, C = 4, HW = 12;
    const std::vector<float> xa = uniform(NA * C * HW, 5), xb = uniform(NB * C * HW, 6),
                             dya = uniform(NA * C * HW, 7), dyb = uniform(NB * C * HW, 8),
                             gamma = uniform(C, 9);
    for (const c::AccumMode mode : {c::AccumMode::kExact, c::AccumMode::kTree}) {
        SCOPED_TRACE(c::accum_mode_name(mode));
        // The other part (B) on the CPU, recording what it hands its hook.
        OtherPart other;
        Recorder rec{&other};
        BatchNormParts parts_b{&rec, Recorder::exact, Recorder::floats, NA + NB};
        BatchNorm2dParams pb{NB, C, HW};
        pb.accum = c::accum_spec(mode);
        pb.parts = &parts_b;
        std::vector<float> mb(C), vb(C), ib(C), dxb(dyb.size()), dgb(C), dbb(C);
        cpu::batchnorm2d_stats(xb.data(), mb.data(), vb.data(), ib.data(), pb);
        cpu::batchnorm2d_backward(dyb.data(), xb.data(), mb.data(), ib.data(), gamma.data(),
                                  dxb.data(), dgb.data(), dbb.data(), true, pb);
        // Part A on both devices, its hook adding B's recorded totals.
        BatchNormParts parts_a{&other, OtherPart::exact, OtherPart::floats, NA + NB};
        BatchNorm2dParams pa{NA, C, HW};
        pa.accum = pb.accum;
        pa.parts = &parts_a;
        std::vector<c::ExactAcc> sg = zero_accs(C), sb = zero_accs(C);
        const Dev<c::ExactAcc> dsg(sg), dsb(sb);
        std::vector<float> m(C), v(C), is(C), dx(dya.size()), dg(C), db(C);
        if (mode == c::AccumMode::kExact) pa.exact_dgamma = sg.data(), pa.exact_dbeta = sb.data();
        cpu::batchnorm2d_stats(xa.data(), m.data(), v.data(), is.data(), pa);
        cpu::batchnorm2d_backward(dya.data(), xa.data(), m.data(), is.data(), gamma.data(),
                                  dx.data(), dg.data(), db.data(), true, pa);
        other.at = 0;
        if (mode == c::AccumMode::kExact) pa.exact_dgamma = dsg.p, pa.exact_dbeta = dsb.p;
        const Dev<float> dxa(xa), ddya(dya), dgamma(gamma), dm(m), dv(v), dis(is), ddx(dx), ddg(dg),
            ddb(db);
        dc::batchnorm2d_stats(dxa.p, dm.p, dv.p, dis.p, pa);
        dc::batchnorm2d_backward(ddya.p, dxa.p, dm.p, dis.p, dgamma.p, ddx.p, ddg.p, ddb.p, true,
                                 pa);
        EXPECT_TRUE(same_bits(dm.host(), m)) << "mean";
        EXPECT_TRUE(same_bits(dv.host(), v)) << "var";
        EXPECT_TRUE(same_bits(dis.host(), is)) << "invstd";
        EXPECT_TRUE(same_bits(ddx.host(), dx)) << "dx (the whole batch's totals)";
        EXPECT_TRUE(same_bits(ddg.host(), dg)) << "dgamma (this part's)";
        EXPECT_TRUE(same_bits(ddb.host(), db)) << "dbeta (this part's)";
        if (mode == c::AccumMode::kExact) {
            EXPECT_TRUE(same_bits(rounded(dsg.host()), rounded(sg))) << "exact_dgamma";
            EXPECT_TRUE(same_bits(rounded(dsb.host()), rounded(sb))) << "exact_dbeta";
        }
        EXPECT_EQ(dc::take_error(), "");
    }
}

}  // namespace
}  // namespace dt::kernels
