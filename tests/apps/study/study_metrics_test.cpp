// SPDX-License-Identifier: MIT
// Stability metrics of `detrain study`: hand-computed values (worked out in the comments), the
// paper-code mistakes they must not repeat (agreement as churn, FN/(FP+TN) as FNR), exact zeros
// for identical replicas, fixed summation order, and the validation messages.
#include "apps/study/study_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/errors.h"

namespace dt::study {
namespace {

using test::has, test::message_of;

constexpr double kTol = 1e-12;

ReplicaData replica(int index, double accuracy, std::vector<int64_t> pred,
                    std::vector<float> weights = {}, std::vector<float> probs = {}) {
    // Built by designated initializers: assigning a literal to the string trips a false
    // -Wrestrict in GCC 12 at -O3 (GCC bug 105329).
    ReplicaData r{.variant = "v",
                  .index = index,
                  .accuracy = accuracy,
                  .labels = std::vector<int32_t>(pred.size(), 0),
                  .predictions = std::move(pred),
                  .probabilities = std::move(probs),
                  .weights = std::move(weights)};
    return r;
}

// ---- scalar statistics ----

TEST(StudyMetricsStats, MeanSumsInIndexOrder) {
    // 1e16 + 1 rounds back to 1e16 (spacing 2, tie to even), so the order is visible.
    EXPECT_EQ(mean({1e16, 1, -1e16}), 0.0);
    EXPECT_EQ(mean({1e16, -1e16, 1}), 1.0 / 3.0);
    EXPECT_TRUE(std::isnan(mean({})));
}

TEST(StudyMetricsStats, SampleStddevUsesNMinus1) {
    // {1,2,3,4}: mean 2.5, squared deviations sum to 5; 5/3 (n-1), not 5/4 (n).
    EXPECT_NEAR(sample_stddev({1, 2, 3, 4}), std::sqrt(5.0 / 3.0), kTol);
    EXPECT_TRUE(std::isnan(sample_stddev({0.5})));
    EXPECT_TRUE(std::isnan(sample_stddev({})));
    // A plain two-pass would leave 0.1+0.1+0.1 != 0.3 residue here; equal values give exactly 0.
    EXPECT_EQ(sample_stddev({0.1, 0.1, 0.1}), 0.0);
    EXPECT_EQ(sample_stddev({0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7}), 0.0);
}

// ---- pairwise metrics ----

TEST(StudyMetricsPairwise, ChurnIsDisagreementNotAgreement) {
    EXPECT_EQ(churn({0, 1, 2, 3}, {0, 1, 2, 0}), 0.25);  // agreement would be 0.75
    EXPECT_EQ(churn({0, 1, 2, 3}, {0, 1, 0, 0}), 0.5);
    EXPECT_EQ(churn({4, 4, 4}, {4, 4, 4}), 0.0);
    EXPECT_TRUE(has(message_of<ValueError>([] { churn({0, 1}, {0, 1, 2}); }), "2 vs 3"));
}

TEST(StudyMetricsPairwise, WeightDistanceNormalisesEachVector) {
    EXPECT_EQ(weight_distance({3, 4}, {6, 8}), 0.0);  // same direction, twice the length
    EXPECT_EQ(weight_distance({1, 0}, {0, 1}), std::sqrt(2.0));
    EXPECT_EQ(weight_distance({1, 0}, {-5, 0}), 2.0);  // opposite directions: the maximum
    // (3,4)/5 - (0,5)/5 = (0.6, -0.2): sqrt(0.4); the unnormalised distance would be sqrt(10).
    EXPECT_NEAR(weight_distance({3, 4}, {0, 5}), std::sqrt(0.4), kTol);
    EXPECT_TRUE(std::isnan(weight_distance({0, 0}, {1, 0})));
    EXPECT_TRUE(has(message_of<ValueError>([] { weight_distance({1, 2, 3}, {1, 2}); }), "3 vs 2"));
}

TEST(StudyMetricsPairwise, PredictionCorrelationHandComputed) {
    const std::vector<float> p = {1, 0, 0, 1};
    EXPECT_EQ(prediction_correlation(p, p), 1.0);
    const std::vector<float> q = {0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f};
    EXPECT_EQ(prediction_correlation(q, q), 1.0);
    // Both means 0.5; dx = (.5,-.5,-.5,.5), dy = (.25,-.25,0,0): sxy = .25, sxx = 1,
    // syy = .125, r = .25 / sqrt(.125) = 1/sqrt(2).
    EXPECT_NEAR(prediction_correlation(p, {0.75f, 0.25f, 0.5f, 0.5f}), 1 / std::sqrt(2.0), kTol);
    EXPECT_NEAR(prediction_correlation(p, {0.25f, 0.75f, 0.5f, 0.5f}), -1 / std::sqrt(2.0), kTol);
    EXPECT_TRUE(std::isnan(prediction_correlation(p, {0.5f, 0.5f, 0.5f, 0.5f})));  // constant
    EXPECT_TRUE(has(message_of<ValueError>([&] { prediction_correlation(p, {1, 0}); }), "4 vs 2"));
}

// Two 2-class members on labels (0, 0, 1): each is right on one example only (1/3), confidently,
// and wrong elsewhere by a small margin; averaged they are right on the first two (2/3).
const std::vector<int32_t> kEnsLabels = {0, 0, 1};
const std::vector<float> kEnsA = {0.875f, 0.125f, 0.375f, 0.625f, 0.75f, 0.25f};
const std::vector<float> kEnsB = {0.375f, 0.625f, 0.875f, 0.125f, 0.75f, 0.25f};

TEST(StudyMetricsPairwise, EnsembleBeatsBothMembers) {
    EXPECT_NEAR(ensemble_accuracy(kEnsA, kEnsB, kEnsLabels, 2), 2.0 / 3.0, kTol);
    EXPECT_NEAR(ensemble_accuracy(kEnsA, kEnsA, kEnsLabels, 2), 1.0 / 3.0, kTol);
    // (0.5, 0.5) after averaging: the first maximum (class 0) wins the tie.
    EXPECT_EQ(ensemble_accuracy({0.75f, 0.25f}, {0.25f, 0.75f}, {0}, 2), 1.0);
    EXPECT_EQ(ensemble_accuracy({0.75f, 0.25f}, {0.25f, 0.75f}, {1}, 2), 0.0);
    EXPECT_TRUE(has(message_of<ValueError>([] { ensemble_accuracy(kEnsA, kEnsB, kEnsLabels, 3); }),
                    "expected 3 examples x 3 classes = 9"));
}

// ---- per-class and subgroup rates ----

TEST(StudyMetricsRates, SubgroupFnrDividesByPositives) {
    // Subgroup {0, 1} of 3 classes. Positives (label 0/1): 0->0, 1->1 (TP, exact), 0->1 (TP, not
    // exact), 1->2 (FN). Negatives (label 2): 2->0, 2->1 (FP), 2->2 four times (TN).
    // TP 3, FN 1, FP 2, TN 4: FNR = 1/4 (the paper code's FN/(FP+TN) would give 1/6),
    // FPR = 2/6, accuracy = 2 exact of 4 positives.
    const std::vector<int32_t> labels = {0, 1, 0, 1, 2, 2, 2, 2, 2, 2};
    const std::vector<int64_t> pred = {0, 1, 1, 2, 0, 1, 2, 2, 2, 2};
    const BinaryRates b = subgroup_rates(labels, pred, {1, 0});
    EXPECT_NEAR(b.fnr, 0.25, kTol);
    EXPECT_NEAR(b.fpr, 1.0 / 3.0, kTol);
    EXPECT_NEAR(b.accuracy, 0.5, kTol);
    const BinaryRates all = subgroup_rates(labels, pred, {0, 1, 2});  // no negatives
    EXPECT_TRUE(std::isnan(all.fpr));
    EXPECT_EQ(all.fnr, 0.0);
    EXPECT_TRUE(has(message_of<ValueError>([&] {
                        subgroup_rates(labels, {0, 1}, {0});
                    }),
                    "10 labels"));
}

TEST(StudyMetricsRates, PerClassAccuracy) {
    const std::vector<double> acc = per_class_accuracy({0, 0, 2, 2, 2, 0}, {0, 1, 2, 2, 0, 0}, 4);
    ASSERT_EQ(acc.size(), 4u);
    EXPECT_NEAR(acc[0], 2.0 / 3.0, kTol);
    EXPECT_TRUE(std::isnan(acc[1]));  // no example of class 1
    EXPECT_NEAR(acc[2], 2.0 / 3.0, kTol);
    EXPECT_TRUE(std::isnan(acc[3]));
    EXPECT_TRUE(has(message_of<ValueError>([] {
                        per_class_accuracy({0, 5}, {0, 0}, 3);
                    }),
                    "label 5 of example 1 is outside [0, 3)"));
}

// ---- one variant ----

// Labels (0,0,1,1,2,2); predictions R0 (0,0,1,1,2,2), R1 (0,1,1,1,2,0), R2 (0,0,0,2,2,2).
std::vector<ReplicaData> three_replicas() {
    std::vector<ReplicaData> r = {replica(0, 1.0, {0, 0, 1, 1, 2, 2}, {3, 4}),
                                  replica(1, 4.0 / 6, {0, 1, 1, 1, 2, 0}, {6, 8}),
                                  replica(2, 4.0 / 6, {0, 0, 0, 2, 2, 2}, {0, 5})};
    for (ReplicaData& x : r) x.labels = {0, 0, 1, 1, 2, 2};
    return r;
}

TEST(StudyMetricsVariant, ThreeReplicasHandComputed) {
    const VariantMetrics m = compute_variant_metrics(three_replicas(), 3, {{"one", {1}}});
    EXPECT_EQ(m.variant, "v");
    EXPECT_EQ(m.replicas, 3);
    // Accuracy (1, 2/3, 2/3): mean 7/9, deviations (2,-1,-1)/9, sum of squares 6/81, /2 -> 1/27.
    EXPECT_NEAR(m.acc_mean, 7.0 / 9.0, kTol);
    EXPECT_NEAR(m.acc_std, std::sqrt(1.0 / 27.0), kTol);
    // Churn (0,1) 2/6 at examples 1,5; (0,2) 2/6 at 2,3; (1,2) 4/6 at 1,2,3,5.
    EXPECT_EQ(m.churn.count, 3);
    EXPECT_NEAR(m.churn.mean, 4.0 / 9.0, kTol);
    EXPECT_NEAR(m.churn.stddev, std::sqrt(1.0 / 27.0), kTol);
    EXPECT_NEAR(m.churn.min, 1.0 / 3.0, kTol);
    EXPECT_NEAR(m.churn.max, 2.0 / 3.0, kTol);
    // Weights (3,4), (6,8), (0,5): distances 0, sqrt(.4), sqrt(.4) -> std sqrt(.4)/sqrt(3).
    EXPECT_EQ(m.weight_distance.count, 3);
    EXPECT_NEAR(m.weight_distance.mean, 2 * std::sqrt(0.4) / 3, kTol);
    EXPECT_NEAR(m.weight_distance.stddev, std::sqrt(0.4 / 3), kTol);
    EXPECT_EQ(m.weight_distance.min, 0.0);
    EXPECT_NEAR(m.weight_distance.max, std::sqrt(0.4), kTol);
    // Per class: c0 (1, .5, 1), c1 (1, 1, 0), c2 (1, .5, 1): std sqrt(1/12), sqrt(1/3), sqrt(1/12).
    ASSERT_EQ(m.per_class_acc_mean.size(), 3u);
    ASSERT_EQ(m.per_class_acc_std.size(), 3u);
    EXPECT_NEAR(m.per_class_acc_mean[0], 5.0 / 6.0, kTol);
    EXPECT_NEAR(m.per_class_acc_mean[1], 2.0 / 3.0, kTol);
    EXPECT_NEAR(m.per_class_acc_std[0], std::sqrt(1.0 / 12.0), kTol);
    EXPECT_NEAR(m.per_class_acc_std[1], std::sqrt(1.0 / 3.0), kTol);
    EXPECT_NEAR(m.per_class_acc_std[2], std::sqrt(1.0 / 12.0), kTol);
    EXPECT_EQ(m.per_class_std_argmax, 1);
    EXPECT_NEAR(m.per_class_std_max, std::sqrt(1.0 / 3.0), kTol);
    EXPECT_NEAR(m.per_class_std_ratio, 3.0, kTol);  // sqrt(1/3) / sqrt(1/27)
    // Subgroup {1}: R0 acc 1 fpr 0 fnr 0; R1 acc 1 fpr 1/4 (example 1) fnr 0; R2 acc 0 fpr 0 fnr 1.
    ASSERT_EQ(m.subgroups.size(), 1u);
    const SubgroupStats& g = m.subgroups[0];
    EXPECT_EQ(g.name, "one");
    EXPECT_EQ(g.classes, std::vector<int>{1});
    EXPECT_NEAR(g.acc_mean, 2.0 / 3.0, kTol);
    EXPECT_NEAR(g.acc_std, std::sqrt(1.0 / 3.0), kTol);
    EXPECT_NEAR(g.fpr_mean, 1.0 / 12.0, kTol);
    EXPECT_NEAR(g.fpr_std, std::sqrt(3.0) / 12.0, kTol);
    EXPECT_NEAR(g.fnr_mean, 1.0 / 3.0, kTol);
    EXPECT_NEAR(g.fnr_std, std::sqrt(1.0 / 3.0), kTol);
    // No probabilities: those metrics are absent, not zero.
    EXPECT_EQ(m.prediction_correlation.count, 0);
    EXPECT_TRUE(std::isnan(m.prediction_correlation.mean));
    EXPECT_EQ(m.ensemble_gain.count, 0);
    EXPECT_TRUE(std::isnan(m.ensemble_gain.mean));
}

TEST(StudyMetricsVariant, IdenticalReplicasGiveExactZeros) {
    const std::vector<float> w = {0.1f, -0.3f, 0.7f, 1e-3f, 2.5f};
    const std::vector<float> p = {0.1f, 0.9f, 0.6f, 0.4f, 0.3f, 0.7f};
    std::vector<ReplicaData> r;
    for (int i = 0; i < 3; ++i) {
        r.push_back(replica(i, 0.7, {1, 0, 1}, w, p));  // argmax of p
        r.back().labels = {1, 1, 0};
    }
    const VariantMetrics m = compute_variant_metrics(r, 2, {{"zero", {0}}});
    EXPECT_EQ(m.acc_std, 0.0);
    EXPECT_EQ(m.churn.mean, 0.0);
    EXPECT_EQ(m.churn.stddev, 0.0);
    EXPECT_EQ(m.weight_distance.mean, 0.0);
    EXPECT_EQ(m.weight_distance.max, 0.0);
    EXPECT_EQ(m.per_class_acc_std, (std::vector<double>{0.0, 0.0}));
    EXPECT_EQ(m.per_class_std_max, 0.0);
    EXPECT_TRUE(std::isnan(m.per_class_std_ratio));  // 0 / 0 is defined as NaN
    EXPECT_EQ(m.prediction_correlation.mean, 1.0);
    EXPECT_EQ(m.prediction_correlation.stddev, 0.0);
    EXPECT_EQ(m.ensemble_gain.mean, 0.0);
    EXPECT_EQ(m.subgroups[0].fnr_std, 0.0);
}

TEST(StudyMetricsVariant, RatioIsInfiniteWhenOnlyAccuracyStdIsZero) {
    // Same accuracy 1/2, opposite classes right: per-class std sqrt(1/2), accuracy std 0.
    std::vector<ReplicaData> r = {replica(0, 0.5, {0, 0}), replica(1, 0.5, {1, 1})};
    for (ReplicaData& x : r) x.labels = {0, 1};
    const VariantMetrics m = compute_variant_metrics(r, 2, {});
    EXPECT_EQ(m.acc_std, 0.0);
    EXPECT_NEAR(m.per_class_std_max, std::sqrt(0.5), kTol);
    EXPECT_EQ(m.per_class_std_argmax, 0);  // classes tie: the first wins
    EXPECT_EQ(m.per_class_std_ratio, std::numeric_limits<double>::infinity());
    EXPECT_EQ(m.churn.count, 1);
    EXPECT_EQ(m.churn.mean, 1.0);
    EXPECT_TRUE(std::isnan(m.churn.stddev));  // one pair
    EXPECT_EQ(m.weight_distance.count, 0);    // no weights given
}

TEST(StudyMetricsVariant, EnsembleGainUsesAccuracyFromPredictions) {
    // Members predict argmax of kEnsA / kEnsB: (0,1,0) and (1,0,0), each 1/3 right. The recorded
    // accuracies are deliberately wrong (0.9) and must not enter the gain: 2/3 - 1/3 = 1/3.
    std::vector<ReplicaData> r = {replica(0, 0.9, {0, 1, 0}, {}, kEnsA),
                                  replica(1, 0.9, {1, 0, 0}, {}, kEnsB)};
    for (ReplicaData& x : r) x.labels = kEnsLabels;
    const VariantMetrics m = compute_variant_metrics(r, 2, {});
    EXPECT_EQ(m.acc_mean, 0.9);
    EXPECT_EQ(m.ensemble_gain.count, 1);
    EXPECT_NEAR(m.ensemble_gain.mean, 1.0 / 3.0, kTol);
    EXPECT_EQ(m.prediction_correlation.count, 1);
    EXPECT_EQ(m.prediction_correlation.mean, prediction_correlation(kEnsA, kEnsB));
}

TEST(StudyMetricsVariant, RejectsInconsistentInput) {
    const auto run = [](std::vector<ReplicaData> r, std::vector<Subgroup> g = {}) {
        return message_of<ValueError>([&] { compute_variant_metrics(r, 3, g); });
    };
    std::vector<ReplicaData> r = three_replicas();
    r[1].predictions.pop_back();
    std::string e = run(r);
    EXPECT_TRUE(has(e, "replica v#1 has 5 predictions but 6 test labels")) << e;
    r = three_replicas();
    r[2].labels[3] = 2;
    e = run(r);
    EXPECT_TRUE(has(e, "replica v#2 has different test labels than replica v#0")) << e;
    EXPECT_TRUE(has(e, "example 3: 2 vs 1")) << e;
    r = three_replicas();
    r[1].weights.push_back(1);
    EXPECT_TRUE(has(run(r), "replica v#1 has 3 weights but replica v#0 has 2"));
    r = three_replicas();
    r[0].probabilities.assign(18, 0.25f);
    EXPECT_TRUE(has(run(r), "replica v#1 has 0 probabilities but expected 18"));
    r = three_replicas();
    r[2].variant = std::string("w");  // not a literal: see replica()
    EXPECT_TRUE(has(run(r), "replica w#2 mixed into variant 'v'"));
    EXPECT_TRUE(has(run(three_replicas(), {{"bad", {0, 3}}}),
                    "subgroup 'bad' names class 3, outside [0, 3)"));
    EXPECT_TRUE(has(run(three_replicas(), {{"neg", {-1}}}), "class -1"));
    EXPECT_TRUE(has(run({}), "no replicas"));
}

// ---- JSON ----

TEST(StudyMetricsJson, EveryFieldWithNullForNaNAndInf) {
    std::vector<ReplicaData> r = {replica(0, 0.5, {0, 0}), replica(1, 0.5, {1, 1})};
    for (ReplicaData& x : r) x.labels = {0, 1};
    const nlohmann::ordered_json j = to_json(compute_variant_metrics(r, 2, {{"g", {1}}}));
    const std::vector<std::string> keys = {"variant",
                                           "replicas",
                                           "acc_mean",
                                           "acc_std",
                                           "churn",
                                           "weight_distance",
                                           "per_class_acc_mean",
                                           "per_class_acc_std",
                                           "per_class_std_max",
                                           "per_class_std_argmax",
                                           "per_class_std_ratio",
                                           "subgroups",
                                           "prediction_correlation",
                                           "ensemble_gain"};
    std::vector<std::string> got;
    for (const auto& item : j.items()) got.push_back(item.key());
    EXPECT_EQ(got, keys);
    EXPECT_EQ(j["variant"], "v");
    EXPECT_EQ(j["acc_std"], 0.0);
    EXPECT_TRUE(j["per_class_std_ratio"].is_null());  // +inf
    EXPECT_EQ(j["churn"].dump(), R"({"mean":1.0,"stddev":null,"min":1.0,"max":1.0,"pairs":1})");
    EXPECT_EQ(j["weight_distance"]["pairs"], 0);
    EXPECT_TRUE(j["weight_distance"]["mean"].is_null());
    EXPECT_EQ(j["per_class_std_argmax"], 0);
    EXPECT_EQ(j["subgroups"][0]["name"], "g");
    EXPECT_EQ(j["subgroups"][0]["classes"], nlohmann::ordered_json::array({1}));
    EXPECT_TRUE(j["subgroups"][0]["fpr_std"].is_number());
    EXPECT_TRUE(to_json(VariantMetrics{})["per_class_std_argmax"].is_null());
}

}  // namespace
}  // namespace dt::study
