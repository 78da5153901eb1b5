// SPDX-License-Identifier: MIT
// Study variants: group expansion, @MODEL, refusals, and the train flags of each replica.
#include "apps/study/study_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace dt::study {
namespace {

StudyTrainSetup setup(bool augment = false, bool dropout = false) {
    StudyTrainSetup s;
    s.model = "smallcnn";
    s.augment_on = augment;
    s.dropout_on = dropout;
    s.first_weight = "conv1.weight";
    s.first_weight_numel = 144;
    return s;
}

std::vector<std::string> names(const std::vector<Variant>& v) {
    std::vector<std::string> n;
    for (const Variant& x : v) n.push_back(x.name);
    return n;
}

std::string error_of(const std::string& list, const StudyTrainSetup& s) {
    std::vector<std::string> notes;
    try {
        parse_variants(list, s, notes);
    } catch (const ValueError& e) {
        return e.what();
    }
    return "";
}

TEST(StudyVariants, GroupsExpandInDocumentedOrder) {
    std::vector<std::string> notes;
    EXPECT_EQ(names(parse_variants("paper", setup(), notes)),
              (std::vector<std::string>{"control", "algo", "impl", "algo+impl"}));
    EXPECT_TRUE(notes.empty());
    // Without augmentation or dropout, `sources` skips those two and says so.
    EXPECT_EQ(names(parse_variants("sources", setup(), notes)),
              (std::vector<std::string>{"init", "shuffle", "init-perturb", "impl-atomic",
                                        "impl-permuted", "threads"}));
    EXPECT_EQ(notes.size(), 2u);
    notes.clear();
    EXPECT_EQ(parse_variants("sources", setup(true, true), notes).size(), 8u);
    EXPECT_TRUE(notes.empty());
    EXPECT_EQ(names(parse_variants("batch-order,algo@smallcnn-bn", setup(), notes)),
              (std::vector<std::string>{"batch-order-tree", "batch-order-exact",
                                        "algo@smallcnn-bn"}));
}

TEST(StudyVariants, BadListsAreRefusedWithTheValidNames) {
    EXPECT_NE(error_of("contrl", setup()).find("unknown variant 'contrl'"), std::string::npos);
    EXPECT_NE(error_of("contrl", setup()).find("batch-order-exact"), std::string::npos);
    EXPECT_NE(error_of("control,paper", setup()).find("'control' is listed twice"),
              std::string::npos);
    EXPECT_NE(error_of("algo@resnet9", setup()).find("unknown model 'resnet9'"),
              std::string::npos);
    EXPECT_NE(error_of("augment", setup()).find("--augment"), std::string::npos);
    EXPECT_NE(error_of("dropout", setup()).find("--dropout"), std::string::npos);
    EXPECT_NE(error_of("", setup()).find("unknown variant ''"), std::string::npos);
    EXPECT_EQ(error_of("augment,dropout", setup(true, true)), "");
}

std::vector<std::string> flags_of(const std::string& name, int replica) {
    std::vector<std::string> notes;
    const auto v = parse_variants(name, setup(true, true), notes);
    return replica_flags(v.at(0), replica, setup(true, true));
}

TEST(StudyVariants, ReplicaFlagsSwitchExactlyOneSource) {
    using V = std::vector<std::string>;
    EXPECT_EQ(flags_of("algo+impl", 0), (V{"--noise", "algo+impl"}));
    EXPECT_EQ(flags_of("shuffle", 3), (V{"--noise", "control", "--seed-shuffle", "random"}));
    EXPECT_EQ(flags_of("impl-atomic", 1), (V{"--noise", "control", "--impl", "fast"}));
    EXPECT_EQ(flags_of("impl-permuted", 1), (V{"--noise", "control", "--impl", "permuted:random"}));
    EXPECT_EQ(flags_of("batch-order-exact", 2),
              (V{"--noise", "control", "--impl", "exact", "--shuffle-within-batch", "random"}));
    EXPECT_EQ(flags_of("threads", 5),
              (V{"--noise", "control", "--impl", "deterministic", "--threads", "2"}));
    EXPECT_EQ(flags_of("algo@smallcnn-bn", 0), (V{"--noise", "algo", "--model", "smallcnn-bn"}));
}

TEST(StudyVariants, AtomicVariantsGetTwoThreadsWhenTheStudyHasOne) {
    using V = std::vector<std::string>;
    StudyTrainSetup one = setup();
    one.threads = 1;
    std::vector<std::string> notes;
    const auto v = parse_variants("control,impl,impl-atomic,algo+impl", one, notes);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("2 threads"), std::string::npos) << notes[0];
    EXPECT_EQ(replica_flags(v[0], 0, one), (V{"--noise", "control"}));
    EXPECT_EQ(replica_flags(v[1], 0, one), (V{"--noise", "impl", "--threads", "2"}));
    EXPECT_EQ(replica_flags(v[2], 0, one),
              (V{"--noise", "control", "--impl", "fast", "--threads", "2"}));
    EXPECT_EQ(replica_flags(v[3], 0, one), (V{"--noise", "algo+impl", "--threads", "2"}));
    // With 2+ threads per replica the study's own thread count stands.
    EXPECT_EQ(replica_flags(v[1], 0, setup()), (V{"--noise", "impl"}));
}

TEST(StudyVariants, InitPerturbMovesADifferentWeightPerReplica) {
    std::vector<std::string> seen;
    for (int i = 0; i < 10; ++i) {
        const auto f = flags_of("init-perturb", i);
        ASSERT_EQ(f.size(), 4u);
        EXPECT_EQ(f[2], "--init-perturb");
        EXPECT_EQ(f[3].rfind("conv1.weight:", 0), 0u) << f[3];
        const long long index = std::stoll(f[3].substr(13));
        EXPECT_GE(index, 0);
        EXPECT_LT(index, 144);
        seen.push_back(f[3]);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end()) << "two replicas share a weight";
}

}  // namespace
}  // namespace dt::study
