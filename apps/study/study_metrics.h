// SPDX-License-Identifier: MIT
// Stability metrics of `detrain study` (issue 4): how much N replicas of one training variant
// disagree, after Zhuang et al. 2021, "Randomness in Neural Network Training: Characterizing the
// Impact of Tooling", with the metric mistakes of its public code fixed (docs/study-metrics.md).
// Pure functions, no I/O. Conventions: every sum runs in index order in double; pairwise metrics
// go over all unordered replica pairs (i < j) in lexicographic order; a standard deviation is the
// sample one (divisor n - 1); NaN marks "undefined" (too few values, empty denominator).
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dt::study {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// What one finished replica contributes (read from its run directory by the caller).
struct ReplicaData {
    std::string variant;
    int index = 0;
    double accuracy = 0;               // top-1 test accuracy in [0,1] (as recorded)
    std::vector<int32_t> labels;       // test labels, same for all replicas
    std::vector<int64_t> predictions;  // predicted label per test example
    // Softmax probabilities, (test_size, num_classes) row-major; may be empty (in all replicas).
    std::vector<float> probabilities;
    // All trainable parameters concatenated in canonical order (no BN running statistics); may
    // be empty in every replica of a variant, and then no weight distance is reported.
    std::vector<float> weights;
    // A language model's last validation loss (nats per token, result.json history); NaN for a
    // classifier.
    double validation_loss = kNaN;
};

/// A named group of classes (e.g. "tops" = {0, 2, 4, 6} on Fashion-MNIST).
struct Subgroup {
    std::string name;
    std::vector<int> classes;
};

/// Summary of one metric over the replica pairs.
struct Spread {
    double mean = kNaN, stddev = kNaN, min = kNaN, max = kNaN;  // stddev: n-1, NaN if count<2
    int count = 0;                                              // number of pairs
};

/// Per-replica subgroup rates summarised over replicas (std: n-1).
struct SubgroupStats {
    std::string name;
    std::vector<int> classes;
    double acc_mean = kNaN, acc_std = kNaN, fpr_mean = kNaN, fpr_std = kNaN, fnr_mean = kNaN,
           fnr_std = kNaN;
};

/// Everything `detrain study` reports for one variant.
struct VariantMetrics {
    std::string variant;
    int replicas = 0;
    double acc_mean = kNaN, acc_std = kNaN;            // recorded accuracies; std n-1
    double val_loss_mean = kNaN, val_loss_std = kNaN;  // language models: validation loss, n-1
    Spread churn;            // fraction of test examples predicted differently
    Spread weight_distance;  // NaN/count 0 when weights are missing
    std::vector<double> per_class_acc_mean, per_class_acc_std;  // per class over replicas (std n-1)
    double per_class_std_max = kNaN;  // max over classes of per_class_acc_std (NaN entries skipped)
    int per_class_std_argmax = -1;    // first class attaining the max; -1 when none is defined
    double per_class_std_ratio = kNaN;  // max / acc_std; NaN if both are 0, +inf if only acc_std
    std::vector<SubgroupStats> subgroups;
    Spread prediction_correlation;  // NaN/count 0 when probabilities are missing
    Spread ensemble_gain;           // NaN/count 0 when probabilities are missing
};

/// Arithmetic mean, summed in index order in double; NaN for an empty vector.
double mean(const std::vector<double>& v);

/// Sample standard deviation (divisor n - 1), two-pass; NaN for n < 2. Equal values give exactly 0.
double sample_stddev(const std::vector<double>& v);

/// Churn: fraction of examples whose predicted labels differ (disagreement, not agreement).
/// Throws ValueError when the sizes differ; NaN for empty vectors.
double churn(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// || w1/||w1|| - w2/||w2|| ||_2 in double, in [0, 2]. Throws ValueError when the sizes differ;
/// NaN when either vector has norm 0 (direction undefined).
double weight_distance(const std::vector<float>& w1, const std::vector<float>& w2);

/// Pearson correlation of the two flattened probability vectors. Throws ValueError when the
/// sizes differ; NaN for fewer than 2 values or when either vector is constant.
double prediction_correlation(const std::vector<float>& p1, const std::vector<float>& p2);

/// Accuracy of the two-member ensemble: argmax of the averaged probabilities (first max on
/// ties) against `labels`. p1, p2: (labels.size(), num_classes) row-major. Throws ValueError on
/// inconsistent sizes; NaN for no examples.
double ensemble_accuracy(const std::vector<float>& p1, const std::vector<float>& p2,
                         const std::vector<int32_t>& labels, int num_classes);

struct BinaryRates {
    double accuracy = kNaN, fpr = kNaN, fnr = kNaN;
};

/// One-vs-rest rates of a subgroup. Positive = true label in `classes`; predicted positive =
/// predicted label in `classes`. accuracy = fraction of positives predicted exactly right
/// (pred == label); FPR = FP/(FP+TN); FNR = FN/(FN+TP); NaN when a denominator is 0.
/// Throws ValueError when the sizes differ.
BinaryRates subgroup_rates(const std::vector<int32_t>& labels, const std::vector<int64_t>& pred,
                           const std::vector<int>& classes);

/// Accuracy per true class; NaN for a class without examples. Throws ValueError when the sizes
/// differ or a label is outside [0, num_classes).
std::vector<double> per_class_accuracy(const std::vector<int32_t>& labels,
                                       const std::vector<int64_t>& pred, int num_classes);

/// All metrics of one variant. Validates the replicas (same variant, same labels, consistent
/// sizes) and subgroups (classes in [0, num_classes)) and throws ValueError naming the replica.
VariantMetrics compute_variant_metrics(const std::vector<ReplicaData>& replicas, int num_classes,
                                       const std::vector<Subgroup>& subgroups);

/// Every field of `m`, in declaration order; NaN and inf become null; a Spread is
/// {"mean","stddev","min","max","pairs"}; per_class_std_argmax is null when -1.
nlohmann::ordered_json to_json(const VariantMetrics& m);

}  // namespace dt::study
