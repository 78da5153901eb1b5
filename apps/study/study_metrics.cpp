// SPDX-License-Identifier: MIT
// Stability metrics of `detrain study` (see study_metrics.h; formulas in docs/study-metrics.md).
// Every floating-point sum here has one fixed order, marked `// ORDER:`, so the report of a study
// is itself reproducible bit for bit from the same replica files.
#include "apps/study/study_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace dt::study {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string who(const ReplicaData& r) { return str("replica ", r.variant, "#", r.index); }

// Fraction of examples with pred == label (computed, not the recorded accuracy).
double accuracy_of(const std::vector<int32_t>& labels, const std::vector<int64_t>& pred) {
    if (labels.empty()) return kNaN;
    std::size_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += pred[i] == labels[i];
    return static_cast<double>(correct) / static_cast<double>(labels.size());
}

// Summary of pair values given in (i<j) lexicographic order; any NaN makes min/max NaN too.
Spread spread_of(const std::vector<double>& values) {
    Spread s;
    s.count = static_cast<int>(values.size());
    if (values.empty()) return s;
    s.mean = mean(values);
    s.stddev = sample_stddev(values);
    const bool any_nan =
        std::any_of(values.begin(), values.end(), [](double x) { return std::isnan(x); });
    if (!any_nan) {
        s.min = *std::min_element(values.begin(), values.end());
        s.max = *std::max_element(values.begin(), values.end());
    }
    return s;
}

// ORDER: pairs (i, j) with i < j, i outer, j inner, so pair values and their sums are ordered.
template <typename PairFn>
Spread over_pairs(std::size_t n, PairFn fn) {
    std::vector<double> values;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) values.push_back(fn(i, j));
    }
    return spread_of(values);
}

// Throws unless every replica fits the first one (variant, labels, sizes). Returns whether the
// replicas carry probabilities (all or none).
bool validate_replicas(const std::vector<ReplicaData>& reps, int num_classes) {
    DT_CHECK_VALUE(!reps.empty(),
                   "study metrics: no replicas given (need at least one per variant)");
    DT_CHECK_VALUE(num_classes > 0, "study metrics: num_classes is ", num_classes, ", must be > 0");
    const ReplicaData& r0 = reps[0];
    const bool has_probs = !r0.probabilities.empty();
    const std::size_t n = r0.labels.size();
    DT_CHECK_VALUE(n > 0, "study metrics: ", who(r0), " has no test labels (empty test set?)");
    for (const ReplicaData& r : reps) {
        DT_CHECK_VALUE(r.variant == r0.variant, "study metrics: ", who(r), " mixed into variant '",
                       r0.variant, "' (compute metrics one variant at a time)");
        DT_CHECK_VALUE(r.accuracy >= 0 && r.accuracy <= 1, "study metrics: ", who(r),
                       " has recorded accuracy ", r.accuracy, ", expected a fraction in [0, 1]");
        DT_CHECK_VALUE(r.labels.size() == n, "study metrics: ", who(r), " has ", r.labels.size(),
                       " test labels but ", who(r0), " has ", n, " (same test set expected)");
        const auto diff = std::mismatch(r.labels.begin(), r.labels.end(), r0.labels.begin());
        DT_CHECK_VALUE(diff.first == r.labels.end(), "study metrics: ", who(r),
                       " has different test labels than ", who(r0), " (first at example ",
                       diff.first - r.labels.begin(), ": ", *diff.first, " vs ", *diff.second,
                       "); all replicas must be evaluated on the same test set, in the same order");
        DT_CHECK_VALUE(r.predictions.size() == n, "study metrics: ", who(r), " has ",
                       r.predictions.size(), " predictions but ", n,
                       " test labels (one prediction per test example expected)");
        DT_CHECK_VALUE(r.weights.size() == r0.weights.size(), "study metrics: ", who(r), " has ",
                       r.weights.size(), " weights but ", who(r0), " has ", r0.weights.size(),
                       " (same model expected; weights are all trainable parameters)");
        const std::size_t want = has_probs ? n * static_cast<std::size_t>(num_classes) : 0;
        DT_CHECK_VALUE(r.probabilities.size() == want, "study metrics: ", who(r), " has ",
                       r.probabilities.size(), " probabilities but expected ", want,
                       has_probs ? " (test_size x num_classes)" : "", " because ", who(r0), " has ",
                       r0.probabilities.size(), " (give probabilities for all replicas or none)");
    }
    return has_probs;
}

void validate_subgroups(const std::vector<Subgroup>& subgroups, int num_classes) {
    for (const Subgroup& g : subgroups) {
        DT_CHECK_VALUE(!g.classes.empty(), "study metrics: subgroup '", g.name,
                       "' names no classes");
        for (int c : g.classes) {
            DT_CHECK_VALUE(c >= 0 && c < num_classes, "study metrics: subgroup '", g.name,
                           "' names class ", c, ", outside [0, ", num_classes, ")");
        }
    }
}

SubgroupStats subgroup_stats(const std::vector<ReplicaData>& reps, const Subgroup& g) {
    std::vector<double> acc, fpr, fnr;
    for (const ReplicaData& r : reps) {  // ORDER: replicas in the given order
        const BinaryRates b = subgroup_rates(r.labels, r.predictions, g.classes);
        acc.push_back(b.accuracy);
        fpr.push_back(b.fpr);
        fnr.push_back(b.fnr);
    }
    return {g.name,    g.classes,          mean(acc), sample_stddev(acc),
            mean(fpr), sample_stddev(fpr), mean(fnr), sample_stddev(fnr)};
}

// Per-class mean/std over replicas, the largest std (NaN classes skipped) and its ratio to acc_std.
void fill_per_class(const std::vector<ReplicaData>& reps, int num_classes, VariantMetrics& m) {
    std::vector<std::vector<double>> per_rep;  // [replica][class]
    for (const ReplicaData& r : reps) {
        per_rep.push_back(per_class_accuracy(r.labels, r.predictions, num_classes));
    }
    for (std::size_t c = 0; c < static_cast<std::size_t>(num_classes); ++c) {
        std::vector<double> col;
        for (const auto& row : per_rep) col.push_back(row[c]);  // ORDER: replicas in given order
        m.per_class_acc_mean.push_back(mean(col));
        const double sd = sample_stddev(col);
        m.per_class_acc_std.push_back(sd);
        if (!std::isnan(sd) && (m.per_class_std_argmax < 0 || sd > m.per_class_std_max)) {
            m.per_class_std_max = sd;
            m.per_class_std_argmax = static_cast<int>(c);
        }
    }
    const double mx = m.per_class_std_max, sd = m.acc_std;
    if (std::isnan(mx) || std::isnan(sd) || (mx == 0 && sd == 0)) {
        m.per_class_std_ratio = kNaN;
    } else {
        m.per_class_std_ratio = sd == 0 ? kInf : mx / sd;
    }
}

nlohmann::ordered_json number(double x) {
    return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json numbers(const std::vector<double>& v) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double x : v) a.push_back(number(x));
    return a;
}

nlohmann::ordered_json spread_json(const Spread& s) {
    return {{"mean", number(s.mean)},
            {"stddev", number(s.stddev)},
            {"min", number(s.min)},
            {"max", number(s.max)},
            {"pairs", s.count}};
}

}  // namespace

// ---- scalar statistics ----

double mean(const std::vector<double>& v) {
    if (v.empty()) return kNaN;
    double sum = 0;
    for (double x : v) sum += x;  // ORDER: index order, double
    return sum / static_cast<double>(v.size());
}

double sample_stddev(const std::vector<double>& v) {
    if (v.size() < 2) return kNaN;
    // Shifted two-pass: deviations from v[0] first, so equal values give exactly 0 (a plain
    // mean of n copies of 0.1 is not 0.1, and its deviations would not vanish).
    std::vector<double> d;
    for (double x : v) d.push_back(x - v[0]);
    const double md = mean(d);
    double ss = 0;
    for (double x : d) ss += (x - md) * (x - md);  // ORDER: index order, double
    return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// ---- pairwise metrics ----

double churn(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    DT_CHECK_VALUE(a.size() == b.size(), "churn: prediction vectors differ in size: ", a.size(),
                   " vs ", b.size(), " (both must cover the same test set)");
    if (a.empty()) return kNaN;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    return static_cast<double>(differ) / static_cast<double>(a.size());
}

double weight_distance(const std::vector<float>& w1, const std::vector<float>& w2) {
    DT_CHECK_VALUE(w1.size() == w2.size(),
                   "weight_distance: weight vectors differ in size: ", w1.size(), " vs ", w2.size(),
                   " (same model and parameter order expected)");
    double s1 = 0, s2 = 0;
    for (std::size_t i = 0; i < w1.size(); ++i) {  // ORDER: index order, double
        s1 += static_cast<double>(w1[i]) * w1[i];
        s2 += static_cast<double>(w2[i]) * w2[i];
    }
    const double n1 = std::sqrt(s1), n2 = std::sqrt(s2);
    if (n1 == 0 || n2 == 0) return kNaN;
    double ss = 0;
    for (std::size_t i = 0; i < w1.size(); ++i) {  // ORDER: index order, double
        const double d = w1[i] / n1 - w2[i] / n2;
        ss += d * d;
    }
    return std::sqrt(ss);
}

double prediction_correlation(const std::vector<float>& p1, const std::vector<float>& p2) {
    DT_CHECK_VALUE(p1.size() == p2.size(), "prediction_correlation: probability vectors differ in ",
                   "size: ", p1.size(), " vs ", p2.size(), " (test_size x num_classes each)");
    const std::size_t n = p1.size();
    if (n < 2) return kNaN;
    double sx = 0, sy = 0;
    for (std::size_t i = 0; i < n; ++i) {  // ORDER: index order, double
        sx += p1[i];
        sy += p2[i];
    }
    const double mx = sx / static_cast<double>(n), my = sy / static_cast<double>(n);
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < n; ++i) {  // ORDER: index order, double
        const double dx = p1[i] - mx, dy = p2[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx == 0 || syy == 0) return kNaN;
    // sqrt of the product (not product of sqrts): sqrt(fl(x*x)) == x, so identical inputs give
    // exactly 1.
    return sxy / std::sqrt(sxx * syy);
}

double ensemble_accuracy(const std::vector<float>& p1, const std::vector<float>& p2,
                         const std::vector<int32_t>& labels, int num_classes) {
    DT_CHECK_VALUE(num_classes > 0, "ensemble_accuracy: num_classes is ", num_classes,
                   ", must be > 0");
    const std::size_t k = static_cast<std::size_t>(num_classes), want = labels.size() * k;
    DT_CHECK_VALUE(p1.size() == want && p2.size() == want, "ensemble_accuracy: probability sizes ",
                   p1.size(), " and ", p2.size(), ", expected ", labels.size(), " examples x ",
                   num_classes, " classes = ", want);
    if (labels.empty()) return kNaN;
    std::size_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        std::size_t best = 0;
        double best_p = -kInf;
        for (std::size_t c = 0; c < k; ++c) {
            const double p = 0.5 * (static_cast<double>(p1[i * k + c]) + p2[i * k + c]);
            if (p > best_p) {  // strict: the first maximum wins a tie
                best_p = p;
                best = c;
            }
        }
        correct += static_cast<int64_t>(best) == labels[i];
    }
    return static_cast<double>(correct) / static_cast<double>(labels.size());
}

// ---- per-class and subgroup rates ----

BinaryRates subgroup_rates(const std::vector<int32_t>& labels, const std::vector<int64_t>& pred,
                           const std::vector<int>& classes) {
    DT_CHECK_VALUE(labels.size() == pred.size(), "subgroup_rates: ", labels.size(), " labels but ",
                   pred.size(), " predictions (one per test example expected)");
    std::vector<int64_t> group(classes.begin(), classes.end());
    std::sort(group.begin(), group.end());
    auto in_group = [&](int64_t c) { return std::binary_search(group.begin(), group.end(), c); };
    std::size_t tp = 0, fn = 0, fp = 0, tn = 0, exact = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        const bool pos = in_group(labels[i]), pred_pos = in_group(pred[i]);
        tp += pos && pred_pos;
        fn += pos && !pred_pos;
        fp += !pos && pred_pos;
        tn += !pos && !pred_pos;
        exact += pos && pred[i] == labels[i];
    }
    auto ratio = [](std::size_t num, std::size_t den) {
        return den == 0 ? kNaN : static_cast<double>(num) / static_cast<double>(den);
    };
    // FNR over the positives (FN + TP); the paper's code divides by FP + TN instead.
    return {ratio(exact, tp + fn), ratio(fp, fp + tn), ratio(fn, fn + tp)};
}

std::vector<double> per_class_accuracy(const std::vector<int32_t>& labels,
                                       const std::vector<int64_t>& pred, int num_classes) {
    DT_CHECK_VALUE(num_classes > 0, "per_class_accuracy: num_classes is ", num_classes,
                   ", must be > 0");
    DT_CHECK_VALUE(labels.size() == pred.size(), "per_class_accuracy: ", labels.size(),
                   " labels but ", pred.size(), " predictions (one per test example expected)");
    std::vector<std::size_t> correct(static_cast<std::size_t>(num_classes), 0), total(correct);
    for (std::size_t i = 0; i < labels.size(); ++i) {
        DT_CHECK_VALUE(labels[i] >= 0 && labels[i] < num_classes, "per_class_accuracy: label ",
                       labels[i], " of example ", i, " is outside [0, ", num_classes, ")");
        const auto c = static_cast<std::size_t>(labels[i]);
        ++total[c];
        correct[c] += pred[i] == labels[i];
    }
    std::vector<double> acc;
    for (std::size_t c = 0; c < total.size(); ++c) {
        acc.push_back(
            total[c] == 0 ? kNaN : static_cast<double>(correct[c]) / static_cast<double>(total[c]));
    }
    return acc;
}

// ---- one variant ----

VariantMetrics compute_variant_metrics(const std::vector<ReplicaData>& replicas, int num_classes,
                                       const std::vector<Subgroup>& subgroups) {
    const bool has_probs = validate_replicas(replicas, num_classes);
    validate_subgroups(subgroups, num_classes);
    const std::vector<ReplicaData>& r = replicas;
    VariantMetrics m;
    m.variant = r[0].variant;
    m.replicas = static_cast<int>(r.size());
    std::vector<double> recorded, computed;  // ORDER: replicas in the given order
    for (const ReplicaData& x : r) {
        recorded.push_back(x.accuracy);
        computed.push_back(accuracy_of(x.labels, x.predictions));
    }
    m.acc_mean = mean(recorded);
    m.acc_std = sample_stddev(recorded);
    std::vector<double> losses;  // ORDER: replicas in the given order
    for (const ReplicaData& x : r) losses.push_back(x.validation_loss);
    m.val_loss_mean = mean(losses);  // NaN for classifiers: every loss is NaN
    m.val_loss_std = sample_stddev(losses);
    m.churn = over_pairs(r.size(), [&](std::size_t i, std::size_t j) {
        return churn(r[i].predictions, r[j].predictions);
    });
    if (!r[0].weights.empty()) {
        m.weight_distance = over_pairs(r.size(), [&](std::size_t i, std::size_t j) {
            return weight_distance(r[i].weights, r[j].weights);
        });
    }
    fill_per_class(r, num_classes, m);
    for (const Subgroup& g : subgroups) m.subgroups.push_back(subgroup_stats(r, g));
    if (has_probs) {
        m.prediction_correlation = over_pairs(r.size(), [&](std::size_t i, std::size_t j) {
            return prediction_correlation(r[i].probabilities, r[j].probabilities);
        });
        m.ensemble_gain = over_pairs(r.size(), [&](std::size_t i, std::size_t j) {
            const double ens =
                ensemble_accuracy(r[i].probabilities, r[j].probabilities, r[i].labels, num_classes);
            return ens - (computed[i] + computed[j]) / 2;
        });
    }
    return m;
}

nlohmann::ordered_json to_json(const VariantMetrics& m) {
    nlohmann::ordered_json j;
    j["variant"] = m.variant;
    j["replicas"] = m.replicas;
    j["acc_mean"] = number(m.acc_mean);
    j["acc_std"] = number(m.acc_std);
    if (std::isfinite(m.val_loss_mean)) {
        j["validation_loss_mean"] = number(m.val_loss_mean);
        j["validation_loss_std"] = number(m.val_loss_std);
    }
    j["churn"] = spread_json(m.churn);
    j["weight_distance"] = spread_json(m.weight_distance);
    j["per_class_acc_mean"] = numbers(m.per_class_acc_mean);
    j["per_class_acc_std"] = numbers(m.per_class_acc_std);
    j["per_class_std_max"] = number(m.per_class_std_max);
    j["per_class_std_argmax"] = m.per_class_std_argmax < 0
                                    ? nlohmann::ordered_json(nullptr)
                                    : nlohmann::ordered_json(m.per_class_std_argmax);
    j["per_class_std_ratio"] = number(m.per_class_std_ratio);
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const SubgroupStats& g : m.subgroups) {
        groups.push_back({{"name", g.name},
                          {"classes", g.classes},
                          {"acc_mean", number(g.acc_mean)},
                          {"acc_std", number(g.acc_std)},
                          {"fpr_mean", number(g.fpr_mean)},
                          {"fpr_std", number(g.fpr_std)},
                          {"fnr_mean", number(g.fnr_mean)},
                          {"fnr_std", number(g.fnr_std)}});
    }
    j["subgroups"] = groups;
    j["prediction_correlation"] = spread_json(m.prediction_correlation);
    j["ensemble_gain"] = spread_json(m.ensemble_gain);
    return j;
}

}  // namespace dt::study
