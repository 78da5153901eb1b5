// SPDX-License-Identifier: MIT
// Variant names and the train flags of each replica (contract in study_config.h).
#include "apps/study/study_config.h"

#include <algorithm>
#include <set>
#include <string>

#include "apps/train/train_config.h"
#include "engine/core/error.h"
#include "engine/core/named_table.h"
#include "engine/core/text.h"
#include "models/model.h"

namespace dt::study {

namespace {

struct VariantDef {
    const char* name;
    const char* description;
};

// Documentation order; `description` ends up in study.json and the report.
constexpr VariantDef kVariants[] = {
    {"control", "all seeds fixed, deterministic accumulation (--noise control)"},
    {"algo", "all seeds random per replica, deterministic accumulation (--noise algo)"},
    {"impl", "all seeds fixed, atomic accumulation (--noise impl)"},
    {"algo+impl", "all seeds random per replica, atomic accumulation (--noise algo+impl)"},
    {"init", "only the weight-init seed random per replica"},
    {"shuffle", "only the shuffling seed random per replica"},
    {"augment", "only the augmentation seed random per replica"},
    {"dropout", "only the dropout seed random per replica"},
    {"init-perturb", "replica i moves one initial weight of the first layer by one float32 step"},
    {"impl-atomic", "seeds fixed; atomic accumulation at the cross-sample sites (--impl fast)"},
    {"impl-permuted", "seeds fixed; every site sums in a seeded random order, seed per replica"},
    {"threads", "seeds fixed, deterministic; replica i runs on 1 + i % 4 threads"},
    {"batch-order-tree", "seeds fixed; samples permuted inside every batch per replica, tree"},
    {"batch-order-exact", "seeds fixed; samples permuted inside every batch per replica, exact"},
};

std::string valid_names_text() {
    return "paper, sources, batch-order, " + join_text(names_of(kVariants)) +
           " (each optionally @MODEL)";
}

// The seed variants of a source the study trains without: that seed changes nothing, so they
// are skipped where a group names them and an error where they are named alone.
struct SeedOfAnOffSource {
    const char* variant;
    bool StudyTrainSetup::*source_on;
    const char* skipped;  // the note of a group's variant skipped
    const char* error;    // the message of a variant named alone
};

constexpr SeedOfAnOffSource kSeedsOfOffSources[] = {
    {"augment", &StudyTrainSetup::augment_on,
     "variant augment skipped: the study trains without augmentation (add --augment crop+flip "
     "to include it)",
     "--variants augment: the study trains without augmentation, so the augmentation seed "
     "changes nothing; add --augment crop|flip|crop+flip"},
    {"dropout", &StudyTrainSetup::dropout_on,
     "variant dropout skipped: the study trains without dropout (add --dropout 0.1 to include "
     "it)",
     "--variants dropout: the study trains without dropout, so the dropout seed changes "
     "nothing; add --dropout P (e.g. 0.1)"},
};

}  // namespace

const std::vector<std::string>& variant_names() {
    static const std::vector<std::string> v = names_of(kVariants);
    return v;
}

std::vector<Variant> parse_variants(const std::string& list, const StudyTrainSetup& setup,
                                    std::vector<std::string>& notes) {
    std::vector<Variant> out;
    std::set<std::string> seen;
    auto add = [&](const std::string& base, const std::string& model, bool from_group) {
        for (const SeedOfAnOffSource& off : kSeedsOfOffSources) {
            if (base != off.variant || setup.*off.source_on) continue;
            if (!from_group) throw ValueError(off.error);
            notes.push_back(off.skipped);
            return;
        }
        Variant v{base + (model.empty() ? "" : "@" + model), base, model,
                  find_named(kVariants, base)->description};
        if (!model.empty()) v.description += "; model " + model;
        if (!seen.insert(v.name).second) {
            throw ValueError(str("--variants: '", v.name,
                                 "' is listed twice (after expanding "
                                 "the groups paper, sources, batch-order)"));
        }
        out.push_back(std::move(v));
    };
    for (const std::string& entry : split_text(list, ',')) {
        const std::size_t at = entry.find('@');
        const std::string base = entry.substr(0, at);
        const std::string model = at == std::string::npos ? "" : entry.substr(at + 1);
        if (at != std::string::npos) {
            const auto& models = model_names();
            if (std::find(models.begin(), models.end(), model) == models.end()) {
                throw ValueError(str("--variants '", entry, "': unknown model '", model,
                                     "'; models: ", join_text(models)));
            }
        }
        if (base == "paper") {
            for (const char* b : {"control", "algo", "impl", "algo+impl"}) add(b, model, true);
        } else if (base == "sources") {
            for (const char* b : {"init", "shuffle", "augment", "dropout", "init-perturb",
                                  "impl-atomic", "impl-permuted", "threads"}) {
                add(b, model, true);
            }
        } else if (base == "batch-order") {
            add("batch-order-tree", model, true);
            add("batch-order-exact", model, true);
        } else if (find_named(kVariants, base) != nullptr) {
            add(base, model, false);
        } else {
            throw ValueError(
                str("--variants: unknown variant '", entry, "'; valid: ", valid_names_text()));
        }
    }
    if (out.empty())
        throw ValueError("--variants: no variant to train; valid: " + valid_names_text());
    if (setup.threads < 2) {
        for (const Variant& v : out) {
            if (v.base == "impl" || v.base == "algo+impl" || v.base == "impl-atomic") {
                notes.push_back(
                    "variants with atomic accumulation train on 2 threads (the "
                    "study's --threads is 1, and atomics on one thread add in a "
                    "fixed order: no implementation noise)");
                break;
            }
        }
    }
    return out;
}

std::vector<std::string> replica_flags(const Variant& v, int replica,
                                       const StudyTrainSetup& setup) {
    std::vector<std::string> f;
    const std::string& b = v.base;
    if (b == "control" || b == "algo" || b == "impl" || b == "algo+impl") {
        f = {"--noise", b};
    } else if (b == "init" || b == "shuffle" || b == "augment" || b == "dropout") {
        f = {"--noise", "control", "--seed-" + b, "random"};
    } else if (b == "init-perturb") {
        // Replica i perturbs element (i * 7919) mod numel: distinct weights for the replicas of
        // a study (7919 is prime), spread over the tensor rather than its first row.
        const long long n = std::max(1LL, setup.first_weight_numel);
        const long long index = (static_cast<long long>(replica) * 7919) % n;
        f = {"--noise", "control", "--init-perturb",
             setup.first_weight + ":" + std::to_string(index) + ":up"};
    } else if (b == "impl-atomic") {
        f = {"--noise", "control", "--impl", "fast"};
    } else if (b == "impl-permuted") {
        f = {"--noise", "control", "--impl", "permuted:random"};
    } else if (b == "threads") {
        f = {"--noise",       "control",   "--impl",
             "deterministic", "--threads", std::to_string(1 + replica % 4)};
    } else if (b == "batch-order-tree" || b == "batch-order-exact") {
        f = {"--noise",
             "control",
             "--impl",
             b == "batch-order-tree" ? "deterministic" : "exact",
             "--shuffle-within-batch",
             "random"};
    } else {
        throw Error("replica_flags: unknown variant " + b);
    }
    const bool atomic = b == "impl" || b == "algo+impl" || b == "impl-atomic";
    if (atomic && setup.threads < 2) {
        f.push_back("--threads");
        f.push_back("2");
    }
    if (!v.model.empty()) {
        f.push_back("--model");
        f.push_back(v.model);
    }
    return f;
}

std::string variant_dir_name(const Variant& v) { return v.name; }

}  // namespace dt::study
