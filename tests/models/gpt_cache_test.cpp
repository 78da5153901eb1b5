// SPDX-License-Identifier: MIT
// GPT inference (models/gpt.h): the KV cache's logits equal the training forward's bit for bit
// (a prompt at once, then a token at a time; against the whole sequence's forward and a prefix's
// own forward), a sequence's logits do not depend on the batch around it (alone, in a batch of
// three, reversed), each in tree, kahan and exact; a cached step computes one query row per
// block and head, whatever the position; the context bounds the cache.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/attention.h"
#include "models/gpt.h"
#include "tests/support/models.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using kernels::common::accum_spec;
using kernels::common::AccumMode;

constexpr int64_t kContext = 40;  // more than one key block of 32

std::unique_ptr<GPT> tiny_gpt() { return test::gpt_model(2, 2, 16, kContext, 3); }

std::vector<int64_t> random_tokens(int64_t n, uint64_t seed) {
    const std::vector<float> u = test::uniform_floats(n, 0.0f, 256.0f, seed, 2);
    std::vector<int64_t> t(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) t[i] = static_cast<int64_t>(u[i]) % 256;
    return t;
}

/// Rows [first, first + n) of a (rows, 256) logits tensor.
std::vector<float> rows(const Tensor& logits, int64_t first, int64_t n) {
    const std::vector<float> v = logits.to_vector();
    return {v.begin() + first * 256, v.begin() + (first + n) * 256};
}

Tensor forward_of(GPT& m, const std::vector<int64_t>& tokens, int64_t B = 1) {
    autograd::NoGradGuard no_grad;
    const auto T = static_cast<int64_t>(tokens.size()) / B;
    return m.forward(Tensor::from_vector_i64({B, T}, tokens), ForwardContext{});
}

const AccumMode kModes[] = {AccumMode::kTree, AccumMode::kKahan, AccumMode::kExact};
const char* name_of(AccumMode m) {
    return m == AccumMode::kTree ? "tree" : m == AccumMode::kKahan ? "kahan" : "exact";
}

TEST(GptCache, CachedLogitsEqualTheTrainingForward) {
    auto m = tiny_gpt();
    const std::vector<int64_t> seq = random_tokens(kContext, 11);
    for (AccumMode mode : kModes) {
        SCOPED_TRACE(name_of(mode));
        const ScopedReduceConfig config(accum_spec(mode));
        const Tensor whole = forward_of(*m, seq);
        GptCache cache = m->new_cache();
        const int64_t prompt = 5;
        const Tensor first = m->forward_cached({seq.begin(), seq.begin() + prompt}, cache);
        EXPECT_EQ(rows(first, 0, prompt), rows(whole, 0, prompt));
        for (int64_t t = prompt; t < kContext; ++t) {
            const Tensor step = m->forward_cached({seq[static_cast<std::size_t>(t)]}, cache);
            ASSERT_EQ(step.shape(), (Shape{1, 256}));
            EXPECT_EQ(rows(step, 0, 1), rows(whole, t, 1)) << "token " << t;
        }
        EXPECT_EQ(cache.length, kContext);
        // A prefix's own forward (T = 33: two key blocks) gives the same rows.
        const std::vector<int64_t> prefix(seq.begin(), seq.begin() + 33);
        EXPECT_EQ(rows(forward_of(*m, prefix), 0, 33), rows(whole, 0, 33));
    }
}

TEST(GptCache, ASequencesLogitsDoNotDependOnItsBatch) {
    auto m = tiny_gpt();
    const int64_t T = 36;
    const std::vector<int64_t> a = random_tokens(T, 21), b = random_tokens(T, 22),
                               c = random_tokens(T, 23);
    for (AccumMode mode : kModes) {
        SCOPED_TRACE(name_of(mode));
        const ScopedReduceConfig config(accum_spec(mode));
        const std::vector<float> alone = rows(forward_of(*m, a), 0, T);
        std::vector<int64_t> three = b;
        three.insert(three.end(), a.begin(), a.end());
        three.insert(three.end(), c.begin(), c.end());
        EXPECT_EQ(rows(forward_of(*m, three, 3), T, T), alone) << "in the middle of three";
        std::vector<int64_t> two = a;
        two.insert(two.end(), b.begin(), b.end());
        EXPECT_EQ(rows(forward_of(*m, two, 2), 0, T), alone) << "first of two";
    }
}

TEST(GptCache, AStepComputesOneQueryRowPerBlockAndHead) {
    auto m = tiny_gpt();
    const std::vector<int64_t> seq = random_tokens(kContext, 31);
    GptCache cache = m->new_cache();
    m->forward_cached({seq.begin(), seq.begin() + 8}, cache);
    for (int64_t t = 8; t < kContext; ++t) {
        const int64_t before = attention_query_rows_computed();
        m->forward_cached({seq[static_cast<std::size_t>(t)]}, cache);
        EXPECT_EQ(attention_query_rows_computed() - before, 2 * 2) << "token " << t;
    }
}

TEST(GptCache, TheContextBoundsTheCache) {
    auto m = tiny_gpt();
    GptCache cache = m->new_cache();
    m->forward_cached(random_tokens(kContext - 1, 41), cache);
    m->forward_cached({7}, cache);
    EXPECT_THROW(m->forward_cached({7}, cache), ValueError);
    GptCache fresh = m->new_cache();
    EXPECT_THROW(m->forward_cached(random_tokens(kContext + 1, 42), fresh), ValueError);
    EXPECT_THROW(m->forward_cached({}, fresh), ValueError);
}

}  // namespace
}  // namespace dt
