// SPDX-License-Identifier: MIT
// `detrain study`: what a study trains. A study is N replicas of each *variant*; a variant is a
// noise configuration of the switchboard (docs/noise.md) expressed as `detrain train` flags that
// are appended, per replica, after the study's own train flags. Names (docs/study.md):
//   control, algo, impl, algo+impl          the tooling paper's four presets (--noise ...)
//   init, shuffle, augment, dropout,        one algorithmic source random per replica, all else
//   init-perturb                            fixed; init-perturb: replica i moves one weight of the
//                                           first layer by one float32 step (Summers & Dinneen)
//   impl-atomic, impl-permuted              seeds fixed; atomic / seeded-permuted accumulation
//   threads                                 seeds fixed, deterministic; replica i uses 1 + i % 4
//                                           threads (a zero-variance check)
//   batch-order-tree, batch-order-exact     seeds fixed; samples permuted inside every batch per
//                                           replica (membership fixed), under tree / exact
// Groups: paper = the four presets; sources = the single sources (augment and dropout only when
// the study trains with augmentation / dropout); batch-order = both batch-order variants.
// Suffix @MODEL trains that variant with another model (e.g. algo@smallcnn-bn: batch-norm on).
#pragma once
#include <string>
#include <vector>

namespace dt::study {

struct Variant {
    std::string name;   // as written in --variants (after group expansion), e.g. "algo@smallcnn-bn"
    std::string base;   // the name without @MODEL, e.g. "algo"
    std::string model;  // the @MODEL part, "" = the study's --model
    std::string description;
};

/// What replica flags need to know about the study's training setup.
struct StudyTrainSetup {
    std::string model;          // --model of the study
    bool augment_on = false;    // --augment other than none
    bool dropout_on = false;    // --dropout > 0
    std::string first_weight;   // name of the first trainable weight tensor ("conv1.weight")
    long long first_weight_numel = 1;
    int threads = 2;            // threads per replica (the study's --threads, or its default)
};

/// Every variant base name, in documentation order.
const std::vector<std::string>& variant_names();

/// Parses "control,algo,sources,init@smallcnn-bn,..." (groups expanded, duplicates refused).
/// Throws ValueError naming --variants, the bad entry and the valid names; refuses augment /
/// dropout variants when the study trains without augmentation / dropout (with the flag to add).
/// `notes` receives one line per group member skipped for that reason.
std::vector<Variant> parse_variants(const std::string& list, const StudyTrainSetup& setup,
                                    std::vector<std::string>& notes);

/// The `detrain train` flags that make replica `replica` (0-based) of `v` (appended after the
/// study's own train flags, so they win where a flag is repeated). Variants with atomic
/// accumulation (impl, algo+impl, impl-atomic) get --threads 2 when setup.threads < 2: atomics
/// on one thread add in a fixed order, so they would show no implementation noise at all.
std::vector<std::string> replica_flags(const Variant& v, int replica,
                                       const StudyTrainSetup& setup);

/// A directory name for the variant ("algo+impl@smallcnn-bn" is kept; '/' and spaces refused
/// by parse_variants already).
std::string variant_dir_name(const Variant& v);

}  // namespace dt::study
