// SPDX-License-Identifier: MIT
// Flags of `detrain train`: registration (CLI11), validation and result.json form. Validation
// messages are for people typing flags: "--lr: got -1, expected a number > 0 (e.g. 4e-4)".
#include "apps/train_config.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "engine/core/error.h"

namespace dt {

int default_thread_count() { return std::max(1, omp_get_num_procs()); }

// ---- enumerations ----

const std::vector<std::string>& model_names() {
    static const std::vector<std::string> v = {"smallcnn", "smallcnn-bn", "mediumcnn", "resnet18"};
    return v;
}
const std::vector<std::string>& optimizer_names() {
    static const std::vector<std::string> v = {"sgd", "adam", "adamw"};
    return v;
}
const std::vector<std::string>& schedule_names() {
    static const std::vector<std::string> v = {"constant", "step", "cosine"};
    return v;
}
const std::vector<std::string>& init_names() {
    static const std::vector<std::string> v = {"glorot", "he"};
    return v;
}
const std::vector<std::string>& augment_names() {
    static const std::vector<std::string> v = {"none", "crop", "flip", "crop+flip"};
    return v;
}
const std::vector<std::string>& normalize_names() {
    static const std::vector<std::string> v = {"unit", "standard"};
    return v;
}
const std::vector<std::string>& progress_names() {
    static const std::vector<std::string> v = {"auto", "bar", "plain", "none"};
    return v;
}

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = "|") {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) s += sep;
        s += v[i];
    }
    return s;
}

// ---- validation helpers: each throws ValueError "--flag: got X, expected Y" ----

template <typename T>
[[noreturn]] void reject(const char* flag, const T& value, const std::string& expected) {
    throw ValueError(str(flag, ": got ", value, ", expected ", expected));
}

void check_member(const char* flag, const std::string& value, const std::vector<std::string>& ok) {
    if (std::find(ok.begin(), ok.end(), value) == ok.end()) {
        reject(flag, "'" + value + "'", "one of " + join(ok, ", "));
    }
}

void check_at_least(const char* flag, double value, double lo) {
    if (!(value >= lo) || !std::isfinite(value)) reject(flag, value, str("a number >= ", lo));
}

void check_positive(const char* flag, double value, const char* example) {
    if (!(value > 0) || !std::isfinite(value)) {
        reject(flag, value, str("a number > 0 (e.g. ", example, ")"));
    }
}

// CLI11 2.1 converts "-3" to 2^64-3 and saturates overflow; seeds must be plain decimals.
std::string check_seed_text(std::string& text) {
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    if (digits) (void)std::strtoull(text.c_str(), nullptr, 10);
    if (!digits || errno == ERANGE) return "expected an integer in [0, 2^64), got " + text;
    return "";
}

}  // namespace

// ---- registration ----

void add_train_flags(CLI::App& app, TrainConfig& cfg) {
    auto choice = [](const std::vector<std::string>& v) { return " (" + join(v) + ")"; };
    // A flag given twice: the last one wins (scripts append overrides to a base command).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    app.add_option("--model", cfg.model, "Model" + choice(model_names()))->capture_default_str();
    app.add_option("--kernel-size", cfg.kernel_size,
                   "Convolution kernel size of mediumcnn (1|3|5|7)")
        ->capture_default_str();
    app.add_option("--init", cfg.init, "Weight init, uniform" + choice(init_names()))
        ->capture_default_str();
    app.add_option("--dropout", cfg.dropout, "Dropout probability before the classifier, [0, 1)")
        ->capture_default_str();

    app.add_option("--dataset", cfg.dataset, "Data set (" + join(dataset_names()) + ")")
        ->capture_default_str();
    app.add_option("--data-dir", cfg.data_dir,
                   "Directory with the data set's files (default: /usr/share/datasets/<dataset>)");
    app.add_option("--augment", cfg.augment, "Training augmentation" + choice(augment_names()))
        ->capture_default_str();
    app.add_option("--crop-padding", cfg.crop_padding, "Zero padding of random crops, in pixels")
        ->capture_default_str();
    app.add_option(
           "--normalize", cfg.normalize,
           "Input scaling: unit = x/255, standard = per-channel mean/std of the train split")
        ->capture_default_str();
    app.add_flag("--no-shuffle", cfg.no_shuffle, "Visit training examples in data-set order");
    app.add_option("--limit-train", cfg.limit_train, "Use the first N training examples (0 = all)")
        ->capture_default_str();
    app.add_option("--limit-test", cfg.limit_test, "Use the first N test examples (0 = all)")
        ->capture_default_str();

    app.add_option("--epochs", cfg.epochs, "Training epochs")->capture_default_str();
    app.add_option("--batch-size", cfg.batch_size, "Training batch size")->capture_default_str();
    app.add_option("--eval-batch-size", cfg.eval_batch_size, "Evaluation batch size")
        ->capture_default_str();
    app.add_option("--lr", cfg.lr, "Base learning rate")->capture_default_str();
    app.add_option("--optimizer", cfg.optimizer, "Optimizer" + choice(optimizer_names()))
        ->capture_default_str();
    app.add_option("--momentum", cfg.momentum, "SGD momentum (ignored by adam/adamw)")
        ->capture_default_str();
    app.add_flag("--nesterov", cfg.nesterov, "SGD with Nesterov momentum");
    app.add_option("--weight-decay", cfg.weight_decay,
                   "Weight decay (sgd/adam: L2 on the gradient; adamw: decoupled)")
        ->capture_default_str();
    app.add_option("--schedule", cfg.schedule, "Learning-rate schedule" + choice(schedule_names()))
        ->capture_default_str();
    app.add_option("--step-epochs", cfg.step_epochs, "step: multiply lr by --gamma every N epochs")
        ->capture_default_str();
    app.add_option("--gamma", cfg.gamma, "step: decay factor")->capture_default_str();
    app.add_option("--warmup-epochs", cfg.warmup_epochs, "cosine: linear warm-up epochs")
        ->capture_default_str();
    app.add_option("--min-lr", cfg.min_lr, "cosine: final learning rate")->capture_default_str();

    const CLI::Validator seed_check(check_seed_text, "", "seed");
    app.add_option("--seed", cfg.seed, "Sets all four seeds below")
        ->capture_default_str()
        ->check(seed_check);
    app.add_option_function<uint64_t>(
           "--seed-init", [&cfg](const uint64_t& v) { cfg.seed_init = v; },
           "Seed of the weight init (default: --seed)")
        ->check(seed_check);
    app.add_option_function<uint64_t>(
           "--seed-shuffle", [&cfg](const uint64_t& v) { cfg.seed_shuffle = v; },
           "Seed of the per-epoch shuffle (default: --seed)")
        ->check(seed_check);
    app.add_option_function<uint64_t>(
           "--seed-augment", [&cfg](const uint64_t& v) { cfg.seed_augment = v; },
           "Seed of crops/flips (default: --seed)")
        ->check(seed_check);
    app.add_option_function<uint64_t>(
           "--seed-dropout", [&cfg](const uint64_t& v) { cfg.seed_dropout = v; },
           "Seed of dropout masks (default: --seed)")
        ->check(seed_check);

    app.add_option("--threads", cfg.threads, "CPU threads (results do not depend on it)")
        ->capture_default_str();
    app.add_option("--progress", cfg.progress,
                   "Progress output" + choice(progress_names()) +
                       "; auto = live bar on a terminal, plain lines otherwise")
        ->capture_default_str();
    app.add_option("--out", cfg.out, "Output directory (default: runs/<model>-<dataset>)");
}

// ---- validation ----

void validate_train_config(const TrainConfig& c) {
    check_member("--model", c.model, model_names());
    if (c.kernel_size != 1 && c.kernel_size != 3 && c.kernel_size != 5 && c.kernel_size != 7) {
        reject("--kernel-size", c.kernel_size, "one of 1, 3, 5, 7");
    }
    check_member("--init", c.init, init_names());
    if (!(c.dropout >= 0 && c.dropout < 1))
        reject("--dropout", c.dropout, "a probability in [0, 1)");

    check_member("--dataset", c.dataset, dataset_names());
    check_member("--augment", c.augment, augment_names());
    if (c.crop_padding < 0 || c.crop_padding > 64) {
        reject("--crop-padding", c.crop_padding, "a pixel count in [0, 64]");
    }
    check_member("--normalize", c.normalize, normalize_names());
    if (c.limit_train < 0) reject("--limit-train", c.limit_train, "a count >= 0 (0 = all)");
    if (c.limit_test < 0) reject("--limit-test", c.limit_test, "a count >= 0 (0 = all)");

    if (c.epochs < 1) reject("--epochs", c.epochs, "an integer >= 1");
    if (c.batch_size < 1) reject("--batch-size", c.batch_size, "an integer >= 1 (e.g. 128)");
    if (c.eval_batch_size < 1) reject("--eval-batch-size", c.eval_batch_size, "an integer >= 1");
    check_positive("--lr", c.lr, "4e-4");
    check_member("--optimizer", c.optimizer, optimizer_names());
    if (!(c.momentum >= 0 && c.momentum < 1))
        reject("--momentum", c.momentum, "a number in [0, 1)");
    if (c.nesterov && c.optimizer == "sgd" && c.momentum == 0) {
        reject("--nesterov with --momentum", c.momentum, "a momentum > 0");
    }
    check_at_least("--weight-decay", c.weight_decay, 0);
    check_member("--schedule", c.schedule, schedule_names());
    check_positive("--step-epochs", c.step_epochs, "30");
    if (!(c.gamma > 0 && c.gamma <= 1)) reject("--gamma", c.gamma, "a factor in (0, 1]");
    check_at_least("--warmup-epochs", c.warmup_epochs, 0);
    check_at_least("--min-lr", c.min_lr, 0);
    if (c.min_lr > c.lr) reject("--min-lr", c.min_lr, str("a rate <= --lr (", c.lr, ")"));

    if (c.threads < 1 || c.threads > 4096)
        reject("--threads", c.threads, "an integer in [1, 4096]");
    check_member("--progress", c.progress, progress_names());
}

void finalize_train_config(TrainConfig& c) {
    validate_train_config(c);
    if (c.data_dir.empty()) c.data_dir = default_data_dir(c.dataset);
    if (c.out.empty()) c.out = "runs/" + c.model + "-" + c.dataset;
}

// ---- result.json form ----

nlohmann::ordered_json to_json(const TrainConfig& c) {
    nlohmann::ordered_json j;  // flag order, for people reading result.json
    j["model"] = c.model;
    j["kernel-size"] = c.kernel_size;
    j["init"] = c.init;
    j["dropout"] = c.dropout;
    j["dataset"] = c.dataset;
    j["data-dir"] = c.data_dir;
    j["augment"] = c.augment;
    j["crop-padding"] = c.crop_padding;
    j["normalize"] = c.normalize;
    j["shuffle"] = !c.no_shuffle;
    j["limit-train"] = c.limit_train;
    j["limit-test"] = c.limit_test;
    j["epochs"] = c.epochs;
    j["batch-size"] = c.batch_size;
    j["eval-batch-size"] = c.eval_batch_size;
    j["lr"] = c.lr;
    j["optimizer"] = c.optimizer;
    j["momentum"] = c.momentum;
    j["nesterov"] = c.nesterov;
    j["weight-decay"] = c.weight_decay;
    j["schedule"] = c.schedule;
    j["step-epochs"] = c.step_epochs;
    j["gamma"] = c.gamma;
    j["warmup-epochs"] = c.warmup_epochs;
    j["min-lr"] = c.min_lr;
    j["seed"] = c.seed;
    j["seed-init"] = c.init_seed();
    j["seed-shuffle"] = c.shuffle_seed();
    j["seed-augment"] = c.augment_seed();
    j["seed-dropout"] = c.dropout_seed();
    j["threads"] = c.threads;
    j["progress"] = c.progress;
    j["out"] = c.out;
    return j;
}

}  // namespace dt
