// SPDX-License-Identifier: MIT
// Causal self-attention's CPU kernels (kernels/attention.h) beyond the accumulation-mode tester
// (tests/kernels/modes/attention_entries.cpp): forward and backward within the bounds derived
// from the recipe (tests/support/attention_bounds.h) of the double reference, in every mode, on
// T = 1, T around and past the key block, D odd, H = 1; and batch invariance: a sequence's bits
// alone, inside a batch, and as the prefix of a longer sequence (the KV-cache decode's rows).
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/attention_bounds.h"
#include "tests/support/attention_runs.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::AccumMode;
using common::AccumSpec;

using Outs = test::AttentionOuts;

/// Forward in spec, then the backward in spec from its outputs.
Outs run(const std::vector<float>& qkv, const std::vector<float>& dout, AttentionParams p,
         const AccumSpec& spec) {
    p.accum = spec;
    return test::attention_on_cpu(qkv, dout, p);
}

std::vector<float> qkv_of(const AttentionParams& p, uint32_t tag) {
    return test::uniform_floats(p.B * p.T * 3 * p.H * p.D, -2, 2, test::test_seed(), tag);
}
std::vector<float> dout_of(const AttentionParams& p, uint32_t tag) {
    return test::uniform_floats(p.B * p.T * p.H * p.D, -1, 1, test::test_seed(), tag);
}

std::string name(const AttentionParams& p) {
    return "B=" + std::to_string(p.B) + " T=" + std::to_string(p.T) + " H=" + std::to_string(p.H) +
           " D=" + std::to_string(p.D);
}

const std::vector<AttentionParams> kShapes = {
    {.B = 1, .T = 1, .H = 1, .D = 1},  {.B = 2, .T = 5, .H = 1, .D = 3},
    {.B = 1, .T = 32, .H = 2, .D = 4}, {.B = 2, .T = 33, .H = 3, .D = 5},
    {.B = 2, .T = 70, .H = 2, .D = 7}, {.B = 1, .T = 161, .H = 1, .D = 16}};

TEST(AttentionKernel, WithinDerivedBoundsOfTheReference) {
    for (const AttentionParams& p : kShapes) {
        SCOPED_TRACE(name(p));
        const std::vector<float> qkv = qkv_of(p, 1), dout = dout_of(p, 2);
        for (const AccumSpec& spec : test::all_mode_specs(5)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            const Outs o = run(qkv, dout, p, spec);
            const test::AttentionRef r =
                test::attention_reference(qkv, &dout, p, spec.mode, spec.mode);
            EXPECT_TRUE(
                test::within_bound(o.out.data(), r.out.data(), r.out_b.data(), std::ssize(o.out)));
            EXPECT_TRUE(test::within_bound(o.rowmax.data(), r.rowmax.data(), r.rowmax_b.data(),
                                           std::ssize(o.rowmax)));
            EXPECT_TRUE(test::within_bound(o.rowsum.data(), r.rowsum.data(), r.rowsum_b.data(),
                                           std::ssize(o.rowsum)));
            EXPECT_TRUE(test::within_bound(o.dqkv.data(), r.dqkv.data(), r.dqkv_b.data(),
                                           std::ssize(o.dqkv)));
        }
    }
}

TEST(AttentionKernel, OneTokenAttendsToItself) {
    // T = 1: p = 1, l = 1, out = v bit for bit; dS = 1 * (dP - Di) * scale with Di = dP: dQ and
    // dK are zero, dV = dout.
    const AttentionParams p{.B = 2, .T = 1, .H = 2, .D = 3};
    const std::vector<float> qkv = qkv_of(p, 3), dout = dout_of(p, 4);
    for (const AccumSpec& spec : test::all_mode_specs(5)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const Outs o = run(qkv, dout, p, spec);
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t c = 0; c < 6; ++c) {
                EXPECT_EQ(o.out[b * 6 + c], qkv[b * 18 + 12 + c]);
                EXPECT_EQ(o.dqkv[b * 18 + c], 0.0f);
                EXPECT_EQ(o.dqkv[b * 18 + 6 + c], 0.0f);
                EXPECT_EQ(o.dqkv[b * 18 + 12 + c], dout[b * 6 + c]);
            }
        EXPECT_EQ(o.rowsum, std::vector<float>(4, 1.0f));
    }
}

/// Sequence b of a (B, T, W) tensor, its first `t` tokens.
std::vector<float> seq(const std::vector<float>& x, int64_t T, int64_t W, int64_t b, int64_t t) {
    return std::vector<float>(x.begin() + b * T * W, x.begin() + (b * T + t) * W);
}
/// Rows of the (B, H, T) statistics of sequence b, their first t.
std::vector<float> stat(const std::vector<float>& x, const AttentionParams& p, int64_t b,
                        int64_t t) {
    std::vector<float> out;
    for (int64_t h = 0; h < p.H; ++h)
        out.insert(out.end(), x.begin() + (b * p.H + h) * p.T, x.begin() + (b * p.H + h) * p.T + t);
    return out;
}

TEST(AttentionKernel, ASequencesBitsDoNotDependOnTheBatchOrOnLaterTokens) {
    // Sequence 1 of a batch of 3 (T = 100: four key blocks) against the same sequence alone, and
    // alone but cut to its first 45 tokens (the rows a KV-cache decode computes): out, rowmax,
    // rowsum and dQ of those rows are the same bits; dK and dV sum over later queries.
    const AttentionParams batch{.B = 3, .T = 100, .H = 2, .D = 8};
    const int64_t C = batch.H * batch.D, T = batch.T, cut = 45;
    const std::vector<float> qkv = qkv_of(batch, 5), dout = dout_of(batch, 6);
    AttentionParams one = batch, prefix = batch;
    one.B = 1, prefix.B = 1, prefix.T = cut;
    for (const AccumSpec& spec : test::all_mode_specs(5)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const Outs all = run(qkv, dout, batch, spec);
        const Outs alone = run(seq(qkv, T, 3 * C, 1, T), seq(dout, T, C, 1, T), one, spec);
        const Outs first = run(seq(qkv, T, 3 * C, 1, cut), seq(dout, T, C, 1, cut), prefix, spec);
        EXPECT_TRUE(test::bitwise_equal(alone.out, seq(all.out, T, C, 1, T)));
        EXPECT_TRUE(test::bitwise_equal(alone.rowmax, stat(all.rowmax, batch, 1, T)));
        EXPECT_TRUE(test::bitwise_equal(alone.rowsum, stat(all.rowsum, batch, 1, T)));
        EXPECT_TRUE(test::bitwise_equal(alone.dqkv, seq(all.dqkv, T, 3 * C, 1, T)));
        EXPECT_TRUE(test::bitwise_equal(first.out, seq(alone.out, T, C, 0, cut)));
        EXPECT_TRUE(test::bitwise_equal(first.rowmax, stat(alone.rowmax, one, 0, cut)));
        EXPECT_TRUE(test::bitwise_equal(first.rowsum, stat(alone.rowsum, one, 0, cut)));
        for (int64_t t = 0; t < cut; ++t)  // dQ of the prefix's rows
            for (int64_t c = 0; c < C; ++c)
                ASSERT_EQ(test::bits(first.dqkv[t * 3 * C + c]),
                          test::bits(alone.dqkv[t * 3 * C + c]))
                    << "dQ at t=" << t << " c=" << c;
    }
}

}  // namespace
}  // namespace dt::kernels
