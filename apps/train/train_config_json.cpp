// SPDX-License-Identifier: MIT
// TrainConfig <-> result.json's "config" object (flag names without "--", flag order).
#include <nlohmann/json.hpp>

#include "apps/train/train_config.h"
#include "engine/core/error.h"

namespace dt {

namespace {

using Json = nlohmann::ordered_json;

// A resolved seed: its number, or "off".
Json seed_json(const SourceSetting& s) { return s.is_off() ? Json("off") : Json(s.seed); }

// --seed as typed: a number for N / fixed:N, "random", or null when not given.
Json seed_flag_json(const std::string& text) {
    if (text.empty()) return nullptr;
    const SourceSetting s = parse_source_setting("--seed", text);
    return s.kind == SourceKind::kFixed ? Json(s.seed) : Json(source_kind_name(s.kind));
}

template <typename T>
void read(const nlohmann::json& j, const char* key, T& out) {
    if (!j.contains(key)) {
        throw ValueError(str("replay: the recorded \"config\" has no \"", key,
                             "\" (a result.json of an older or other program?)"));
    }
    try {
        out = j.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw ValueError(str("replay: the recorded \"config\".\"", key, "\" is ", j.at(key).dump(),
                             ": ", e.what()));
    }
}

}  // namespace

nlohmann::ordered_json to_json(const TrainConfig& c) {
    const NoiseConfig& n = c.noise;
    const NoiseFlags& f = c.noise_flags;
    Json j;  // flag order, for people reading result.json
    j["model"] = c.model;
    j["kernel-size"] = c.kernel_size;
    j["init"] = c.init;
    j["init-from"] = c.init_from.empty() ? Json(nullptr) : Json(c.init_from);
    j["dropout"] = c.dropout;
    j["layers"] = c.layers;
    j["heads"] = c.heads;
    j["width"] = c.width;
    j["context"] = c.context;
    j["dataset"] = c.dataset;
    j["data-dir"] = c.data_dir;
    j["augment"] = c.augment;
    j["crop-padding"] = c.crop_padding;
    j["normalize"] = c.normalize;
    j["shuffle"] = !n.shuffle.is_off();
    j["limit-train"] = c.limit_train;
    j["imbalance"] = c.imbalance;
    j["limit-test"] = c.limit_test;
    j["epochs"] = c.epochs;
    j["batch-size"] = c.batch_size;
    j["eval-batch-size"] = c.eval_batch_size;
    j["lr"] = c.lr;
    j["optimizer"] = c.optimizer;
    j["momentum"] = c.momentum;
    j["nesterov"] = c.nesterov;
    j["weight-decay"] = c.weight_decay;
    j["clip-grad-norm"] = c.clip_grad_norm;
    j["schedule"] = c.schedule;
    j["step-epochs"] = c.step_epochs;
    j["gamma"] = c.gamma;
    j["warmup-epochs"] = c.warmup_epochs;
    j["min-lr"] = c.min_lr;
    j["noise"] = n.preset.empty() ? Json(nullptr) : Json(n.preset);
    j["seed"] = seed_flag_json(f.seed);
    j["seed-init"] = seed_json(n.init);
    j["seed-shuffle"] = seed_json(n.shuffle);
    j["seed-augment"] = seed_json(n.augment);
    j["seed-dropout"] = seed_json(n.dropout);
    j["init-perturb"] = n.init_perturb ? Json(init_perturb_text(*n.init_perturb)) : Json(nullptr);
    j["impl"] = n.impl;
    j["impl-site"] = f.impl_site;
    j["shuffle-within-batch"] = seed_json(n.shuffle_within_batch);
    j["threads"] = c.threads;
    j["isa"] = c.isa;
    j["device"] = c.device;
    j["micro-batch"] = c.micro_batch;
    j["sync-bn"] = c.sync_bn;
    j["overlap"] = c.overlap;
    j["bucket-elements"] = c.bucket_elements;
    j["progress"] = c.progress;
    j["out"] = c.out;
    j["checkpoint-every"] = c.checkpoint_every;
    return j;
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw ValueError("replay: the recorded \"config\" is not an object");
    TrainConfig c;
    read(j, "model", c.model);
    read(j, "kernel-size", c.kernel_size);
    read(j, "init", c.init);
    if (j.contains("init-from") && j.at("init-from").is_string()) read(j, "init-from", c.init_from);
    read(j, "dropout", c.dropout);
    for (auto [key, field] : {std::pair{"layers", &c.layers}, std::pair{"heads", &c.heads},
                              std::pair{"width", &c.width}, std::pair{"context", &c.context}}) {
        if (j.contains(key)) read(j, key, *field);  // records before gpt: the defaults
    }
    read(j, "dataset", c.dataset);
    read(j, "data-dir", c.data_dir);
    read(j, "augment", c.augment);
    read(j, "crop-padding", c.crop_padding);
    read(j, "normalize", c.normalize);
    read(j, "limit-train", c.limit_train);
    if (j.contains("imbalance")) read(j, "imbalance", c.imbalance);
    read(j, "limit-test", c.limit_test);
    read(j, "epochs", c.epochs);
    read(j, "batch-size", c.batch_size);
    read(j, "eval-batch-size", c.eval_batch_size);
    read(j, "lr", c.lr);
    read(j, "optimizer", c.optimizer);
    read(j, "momentum", c.momentum);
    read(j, "nesterov", c.nesterov);
    read(j, "weight-decay", c.weight_decay);
    if (j.contains("clip-grad-norm")) read(j, "clip-grad-norm", c.clip_grad_norm);  // older plans
    read(j, "schedule", c.schedule);
    read(j, "step-epochs", c.step_epochs);
    read(j, "gamma", c.gamma);
    read(j, "warmup-epochs", c.warmup_epochs);
    read(j, "min-lr", c.min_lr);
    read(j, "threads", c.threads);
    if (j.contains("isa")) read(j, "isa", c.isa);
    if (j.contains("device")) read(j, "device", c.device);
    if (j.contains("micro-batch")) read(j, "micro-batch", c.micro_batch);
    if (j.contains("sync-bn")) read(j, "sync-bn", c.sync_bn);
    if (j.contains("overlap")) read(j, "overlap", c.overlap);
    if (j.contains("bucket-elements")) read(j, "bucket-elements", c.bucket_elements);
    read(j, "progress", c.progress);
    read(j, "out", c.out);
    if (j.contains("checkpoint-every")) read(j, "checkpoint-every", c.checkpoint_every);
    // The noise flags as typed, for the replay's own "config" (its "noise" block is the record's).
    if (j.contains("impl-site") && j.at("impl-site").is_array()) {
        read(j, "impl-site", c.noise_flags.impl_site);
    }
    if (j.contains("seed") && j.at("seed").is_number_unsigned()) {
        c.noise_flags.seed = std::to_string(j.at("seed").get<uint64_t>());
    } else if (j.contains("seed") && j.at("seed").is_string()) {
        c.noise_flags.seed = j.at("seed").get<std::string>();
    }
    return c;
}

}  // namespace dt
