// SPDX-License-Identifier: MIT
// Flags of `detrain train`: registration (CLI11) and validation (result.json form:
// train_config_json.cpp). Validation
// messages are for people typing flags: "--lr: got -1, expected a number > 0 (e.g. 4e-4)".
#include "apps/train/train_config.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/text.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/runtime/isa.h"
#include "models/model.h"

namespace dt {

int default_thread_count() { return std::max(1, omp_get_num_procs()); }

// ---- enumerations ----

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
/// "CLASS:FRACTION" split; throws ValueError naming --imbalance.
std::pair<int, double> parse_imbalance(const std::string& text) {
    const std::size_t colon = text.find(':');
    try {
        std::size_t used_c = 0, used_f = 0;
        if (colon == std::string::npos) throw std::invalid_argument("no colon");
        const std::string cls = text.substr(0, colon), frac = text.substr(colon + 1);
        const int c = std::stoi(cls, &used_c);
        const double f = std::stod(frac, &used_f);
        if (used_c != cls.size() || used_f != frac.size() || c < 0) {
            throw std::invalid_argument("trailing text");
        }
        return {c, f};
    } catch (const std::exception&) {
        throw ValueError(str("--imbalance '", text,
                             "': expected CLASS:FRACTION with a class index >= 0 and a fraction "
                             "in (0, 1], e.g. 3:0.1"));
    }
}
}  // namespace

int TrainRecipe::imbalance_class() const {
    return imbalance.empty() ? -1 : parse_imbalance(imbalance).first;
}
double TrainRecipe::imbalance_fraction() const {
    return imbalance.empty() ? 1.0 : parse_imbalance(imbalance).second;
}

const std::vector<std::string>& device_names() {
    static const std::vector<std::string> v = {device_name(Device::kCpu),
                                               device_name(Device::kCuda)};
    return v;
}

const std::vector<std::string>& isa_names() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> names = {"auto"};
        for (CpuIsa isa : kernels::kCpuIsas) names.emplace_back(cpu_isa_name(isa));
        return names;
    }();
    return v;
}

namespace {

// ---- validation helpers: each throws ValueError "--flag: got X, expected Y" ----

template <typename T>
[[noreturn]] void reject(const char* flag, const T& value, const std::string& expected) {
    throw ValueError(str(flag, ": got ", value, ", expected ", expected));
}

void check_member(const char* flag, const std::string& value, const std::vector<std::string>& ok) {
    if (std::find(ok.begin(), ok.end(), value) == ok.end()) {
        reject(flag, "'" + value + "'", "one of " + join_text(ok, ", "));
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

// A CLI11 check of one noise flag: the same parse as finalize_train_config, on that flag alone,
// so a malformed value is a parse error naming the flag ("--seed: got '-3', expected ...").
CLI::Validator noise_check(const std::string& flag,
                           std::function<void(NoiseFlags&, const std::string&)> set) {
    return CLI::Validator(
        [flag, set](std::string& text) -> std::string {
            NoiseFlags f;
            set(f, text);
            try {
                (void)noise_config_from_flags(f);
            } catch (const ValueError& e) {
                std::string msg = e.what();  // CLI11 prefixes "<flag>: " itself
                if (msg.rfind(flag, 0) == 0) msg = msg.substr(flag.size());
                if (msg.rfind(": ", 0) == 0) msg = msg.substr(2);
                if (msg.rfind(' ', 0) == 0) msg = msg.substr(1);
                return msg;
            }
            return "";
        },
        "", "");
}

// The check of a flag that sets one text field.
CLI::Validator noise_check(const std::string& flag, std::string NoiseFlags::*field) {
    return noise_check(flag, [field](NoiseFlags& nf, const std::string& v) { nf.*field = v; });
}

// A noise flag of one value: the flag, the field it sets and its --help text.
struct NoiseFlag {
    const char* flag;
    std::string NoiseFlags::*field;
    std::string help;
};

}  // namespace

// ---- registration ----

const char* const kGptDefaults =
    "--dataset text --batch-size 8 --eval-batch-size 64 --epochs 6 --optimizer adamw --lr 3e-3 "
    "--weight-decay 0.01 --schedule cosine --warmup-epochs 0.2 --min-lr 1e-4";

ModelConfig model_config(const TrainRecipe& c, const DatasetGeometry& g) {
    ModelConfig mc;
    mc.name = c.model;
    mc.kernel_size = c.kernel_size;
    mc.in_channels = g.channels;
    mc.height = g.height;
    mc.width = g.width;
    mc.num_classes = g.num_classes;
    mc.layers = c.layers, mc.heads = c.heads, mc.embed = c.width, mc.context = c.context;
    return mc;
}

void apply_gpt_defaults(TrainRecipe& c) {
    c.dataset = "text";
    c.batch_size = 8;
    c.eval_batch_size = 64;
    c.epochs = 6;
    c.optimizer = "adamw";
    c.lr = 3e-3;
    c.weight_decay = 0.01;
    c.schedule = "cosine";
    c.warmup_epochs = 0.2;
    c.min_lr = 1e-4;
}

std::string flag_choices(const std::vector<std::string>& values) {
    return " (" + join_text(values, "|") + ")";
}

void add_train_flags(CLI::App& app, TrainConfig& cfg) {
    // A flag given twice: the last one wins (scripts append overrides to a base command).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    // A callback of an option runs after parsing, in registration order: --model's sets gpt's
    // recipe before the flags registered later (every other one) set the values given.
    app.add_option(
           "--model", cfg.model,
           "Model" + flag_choices(model_names()) + "; gpt changes the defaults to " + kGptDefaults)
        ->capture_default_str()
        ->each([&cfg](const std::string& m) {
            if (m == "gpt") apply_gpt_defaults(cfg);
        });
    app.add_option("--kernel-size", cfg.kernel_size,
                   "Convolution kernel size of mediumcnn (1|3|5|7)")
        ->capture_default_str();
    app.add_option("--init", cfg.init, "Weight init, uniform" + flag_choices(init_names()))
        ->capture_default_str();
    app.add_option("--init-from", cfg.init_from,
                   "Start from the weights in FILE (safetensors, e.g. a run's "
                   "weights.safetensors) instead of --init: every parameter and buffer of the "
                   "model, names and shapes checked")
        ->type_name("FILE");
    app.add_option("--dropout", cfg.dropout, "Dropout probability before the classifier, [0, 1)")
        ->capture_default_str();
    app.add_option("--layers", cfg.layers, "gpt: transformer blocks")->capture_default_str();
    app.add_option("--heads", cfg.heads, "gpt: attention heads (they divide --width)")
        ->capture_default_str();
    app.add_option("--width", cfg.width, "gpt: features per token")->capture_default_str();
    app.add_option("--context", cfg.context, "gpt: tokens (bytes) per training sequence")
        ->capture_default_str();

    app.add_option("--dataset", cfg.dataset, "Data set (" + join_text(dataset_names(), "|") + ")")
        ->capture_default_str();
    app.add_option("--data-dir", cfg.data_dir,
                   "Directory with the data set's files (default: /usr/share/datasets/<dataset>)");
    app.add_option("--data-file", cfg.data_dir,
                   "--dataset text: the UTF-8 text file, plain or gzip (default: " +
                       default_data_dir("text") + ", The Devil's Dictionary)")
        ->type_name("FILE");
    app.add_option("--augment", cfg.augment,
                   "Training augmentation" + flag_choices(augment_names()))
        ->capture_default_str();
    app.add_option("--crop-padding", cfg.crop_padding, "Zero padding of random crops, in pixels")
        ->capture_default_str();
    app.add_option(
           "--normalize", cfg.normalize,
           "Input scaling: unit = x/255, standard = per-channel mean/std of the train split")
        ->capture_default_str();
    app.add_flag("--no-shuffle", cfg.noise_flags.no_shuffle,
                 "Visit training examples in data-set order (= --seed-shuffle off)");
    app.add_option("--limit-train", cfg.limit_train, "Use the first N training examples (0 = all)")
        ->capture_default_str();
    app.add_option("--limit-test", cfg.limit_test, "Use the first N test examples (0 = all)")
        ->capture_default_str();
    app.add_option("--imbalance", cfg.imbalance,
                   "Under-represent one class: CLASS:FRACTION keeps the first ceil(FRACTION x "
                   "count) training examples of class CLASS (e.g. 3:0.1)");

    app.add_option("--epochs", cfg.epochs, "Training epochs")->capture_default_str();
    app.add_option("--batch-size", cfg.batch_size, "Training batch size")->capture_default_str();
    app.add_option("--eval-batch-size", cfg.eval_batch_size, "Evaluation batch size")
        ->capture_default_str();
    app.add_option("--lr", cfg.lr, "Base learning rate")->capture_default_str();
    app.add_option("--optimizer", cfg.optimizer, "Optimizer" + flag_choices(optimizer_names()))
        ->capture_default_str();
    app.add_option("--momentum", cfg.momentum, "SGD momentum (ignored by adam/adamw)")
        ->capture_default_str();
    app.add_flag("--nesterov", cfg.nesterov, "SGD with Nesterov momentum");
    app.add_option("--weight-decay", cfg.weight_decay,
                   "Weight decay (sgd/adam: L2 on the gradient; adamw: decoupled)")
        ->capture_default_str();
    app.add_option("--clip-grad-norm", cfg.clip_grad_norm,
                   "Scale the gradients when their global L2 norm exceeds this (0: off; site "
                   "grad.norm sums the squares)")
        ->capture_default_str();
    app.add_option("--schedule", cfg.schedule,
                   "Learning-rate schedule" + flag_choices(schedule_names()))
        ->capture_default_str();
    app.add_option("--step-epochs", cfg.step_epochs, "step: multiply lr by --gamma every N epochs")
        ->capture_default_str();
    app.add_option("--gamma", cfg.gamma, "step: decay factor")->capture_default_str();
    app.add_option("--warmup-epochs", cfg.warmup_epochs, "cosine: linear warm-up epochs")
        ->capture_default_str();
    app.add_option("--min-lr", cfg.min_lr, "cosine: final learning rate")->capture_default_str();

    // ---- noise switches (docs/noise.md); precedence: preset < --seed < --seed-<source> ----
    NoiseFlags& f = cfg.noise_flags;
    const NoiseFlag one_value_flags[] = {
        {"--noise", &NoiseFlags::noise,
         "Noise preset (" + join_text(noise_preset_names(), "|") +
             "): control = fixed seeds + deterministic, algo = random seeds + deterministic, "
             "impl = fixed seeds + --impl fast, algo+impl = random + fast; explicit flags "
             "override it"},
        {"--seed", &NoiseFlags::seed,
         "All four sources below: N | fixed:N | random (drawn once, recorded) [default: 0]"},
        {"--seed-init", &NoiseFlags::seed_init,
         "Weight init: N | fixed:N | random (default: --seed)"},
        {"--seed-shuffle", &NoiseFlags::seed_shuffle,
         "Per-epoch shuffle: N | fixed:N | random | off (default: --seed)"},
        {"--seed-augment", &NoiseFlags::seed_augment,
         "Crops/flips: N | fixed:N | random | off = no augmentation (default: --seed)"},
        {"--seed-dropout", &NoiseFlags::seed_dropout,
         "Dropout masks: N | fixed:N | random | off = no dropout (default: --seed)"},
        {"--init-perturb", &NoiseFlags::init_perturb,
         "After init, move one weight to the adjacent float32: NAME:INDEX[:up|down] (e.g. "
         "conv1.weight:0:up)"},
        {"--impl", &NoiseFlags::impl,
         "Accumulation at the reduce sites: deterministic (tree everywhere; default), fast "
         "(atomic at the cross-sample sites), exact (exact at the cross-sample sites: sample "
         "order cannot matter), exact-all, or one mode everywhere: "
         "tree|atomic|kahan|exact|permuted:<seed>|permuted:random"},
    };
    for (const NoiseFlag& n : one_value_flags) {
        app.add_option(n.flag, f.*n.field, n.help)->check(noise_check(n.flag, n.field));
    }
    app.add_option("--impl-site", f.impl_site,
                   "Per-site overrides SITE=MODE[,SITE=MODE...], sites " +
                       join_text(reduce_site_names(), ",") + " (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->expected(1)
        ->check(noise_check("--impl-site",
                            [](NoiseFlags& nf, const std::string& v) { nf.impl_site = {v}; }));
    app.add_option("--shuffle-within-batch", f.shuffle_within_batch,
                   "Permute the samples inside every training batch: N | fixed:N | random | off "
                   "(default off)")
        ->check(noise_check("--shuffle-within-batch", &NoiseFlags::shuffle_within_batch));

    add_run_option_flags(app, cfg);
}

// ---- validation ----

void validate_train_config(const TrainConfig& c) {
    check_member("--model", c.model, model_names());
    if (c.kernel_size != 1 && c.kernel_size != 3 && c.kernel_size != 5 && c.kernel_size != 7) {
        reject("--kernel-size", c.kernel_size, "one of 1, 3, 5, 7");
    }
    check_member("--init", c.init, init_names());
    if (!c.init_from.empty()) {  // before anything is written; names and shapes at model build
        std::error_code ec;
        DT_CHECK_IO(std::filesystem::is_regular_file(c.init_from, ec), "--init-from ",
                    c.init_from, ": no such file (hint: a run's weights.safetensors)");
    }
    if (!(c.dropout >= 0 && c.dropout < 1))
        reject("--dropout", c.dropout, "a probability in [0, 1)");

    check_member("--dataset", c.dataset, dataset_names());
    if ((c.model == "gpt") != (c.dataset == "text")) {
        reject("--dataset", c.dataset,
               c.model == "gpt"
                   ? "text for --model gpt (a byte-level language model)"
                   : "an image data set for --model " + c.model + " (text: --model gpt)");
    }
    if (c.model == "gpt") {
        if (c.layers < 1 || c.layers > 256) reject("--layers", c.layers, "1 to 256 (e.g. 4)");
        if (c.heads < 1 || c.heads > 1024) reject("--heads", c.heads, "1 to 1024 (e.g. 4)");
        if (c.width < 1 || c.width > 65536 || c.width % c.heads != 0)
            reject("--width", c.width, str("1 to 65536, a multiple of --heads (", c.heads, ")"));
        if (c.context < 1 || c.context > 65536)
            reject("--context", c.context, "1 to 65536 bytes (e.g. 128)");
        if (c.augment != "none") reject("--augment", c.augment, "none for text");
        if (!c.imbalance.empty()) reject("--imbalance", c.imbalance, "none for text");
        if (c.normalize != "unit") reject("--normalize", c.normalize, "unit for text (unused)");
    }
    check_member("--augment", c.augment, augment_names());
    if (c.crop_padding < 0 || c.crop_padding > 64) {
        reject("--crop-padding", c.crop_padding, "a pixel count in [0, 64]");
    }
    check_member("--normalize", c.normalize, normalize_names());
    if (c.limit_train < 0) reject("--limit-train", c.limit_train, "a count >= 0 (0 = all)");
    if (c.limit_test < 0) reject("--limit-test", c.limit_test, "a count >= 0 (0 = all)");
    if (!c.imbalance.empty()) {
        c.imbalance_class();  // throws for a malformed value
        const double f = c.imbalance_fraction();
        if (!(f > 0 && f <= 1)) reject("--imbalance", c.imbalance, "a FRACTION in (0, 1]");
    }

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
    if (!(std::isfinite(c.clip_grad_norm) && c.clip_grad_norm >= 0))
        reject("--clip-grad-norm", c.clip_grad_norm, "a norm > 0 (e.g. 1), or 0 for none");
    check_member("--schedule", c.schedule, schedule_names());
    check_positive("--step-epochs", c.step_epochs, "30");
    if (!(c.gamma > 0 && c.gamma <= 1)) reject("--gamma", c.gamma, "a factor in (0, 1]");
    check_at_least("--warmup-epochs", c.warmup_epochs, 0);
    check_at_least("--min-lr", c.min_lr, 0);
    if (c.min_lr > c.lr) reject("--min-lr", c.min_lr, str("a rate <= --lr (", c.lr, ")"));

    if (c.checkpoint_every < 0) {
        reject("--checkpoint-every", c.checkpoint_every, "a step count >= 1, or 0 for never");
    }
    if (c.stop_after < 0)
        reject("--stop-after", c.stop_after, "a global step >= 1, or 0 for never");
    if (c.threads < 1 || c.threads > 4096)
        reject("--threads", c.threads, "an integer in [1, 4096]");
    check_member("--progress", c.progress, progress_names());
    check_member("--isa", c.isa, isa_names());
    check_member("--device", c.device, device_names());
    if (c.micro_batch < 0) reject("--micro-batch", c.micro_batch, "a sample count >= 1, or 0");
    check_member("--sync-bn", c.sync_bn, {"on", "off"});
    check_member("--overlap", c.overlap, {"auto", "on", "off"});
    if (c.bucket_elements < 1)
        reject("--bucket-elements", c.bucket_elements, "an element count >= 1");
    // Without a CUDA build or device: DeviceError naming what is missing, before anything is
    // written.
    if (c.device == device_name(Device::kCuda)) require_device(Device::kCuda);
    if (c.isa != "auto" && !cpu_isa_supported(cpu_isa_from_name(c.isa))) {
        std::vector<std::string> have;
        for (CpuIsa isa : supported_cpu_isas()) have.emplace_back(cpu_isa_name(isa));
        reject("--isa", c.isa, "an instruction set this CPU has: " + join_text(have, "|"));
    }
}

TrainConfig parse_train_flag_list(const std::vector<std::string>& flags, const std::string& who) {
    CLI::App app("train flags of " + who, "detrain " + who);
    TrainConfig cfg;
    add_train_flags(app, cfg);
    std::vector<std::string> reversed(flags.rbegin(), flags.rend());  // CLI11 parses from the back
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        throw ValueError(str(who, ": ", e.what(), " (flags other than the ", who,
                             "'s own are train flags; see detrain train --help)"));
    }
    validate_train_config(cfg);
    noise_config_from_flags(cfg.noise_flags);  // throws for a bad noise flag, before any training
    return cfg;
}

void finalize_train_config(TrainConfig& c) { finalize_train_config(c, os_entropy64); }

void finalize_train_config(TrainConfig& c, const EntropyFn& entropy) {
    validate_train_config(c);
    if (!c.noise_from_record) c.noise = noise_config_from_flags(c.noise_flags);
    resolve_noise_config(c.noise, entropy);  // `random` seeds are drawn here, once
    if (c.data_dir.empty()) c.data_dir = default_data_dir(c.dataset);
    if (c.out.empty()) c.out = "runs/" + c.model + "-" + c.dataset;
}

}  // namespace dt
