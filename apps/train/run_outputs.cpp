// SPDX-License-Identifier: MIT
// Files of a finished run (see run_outputs.h and docs/formats.md).
#include "apps/train/run_outputs.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/common/version.h"
#include "engine/core/error.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors.h"
#include "models/model_io.h"

namespace dt {

const char* const kWeightsHashOrder =
    "SHA-256 of the raw little-endian float32 bytes of every trainable tensor (no BN running "
    "statistics; every NaN as 0x7fc00000), concatenated without names or shapes, in the model's "
    "canonical parameter order (the order of weights.safetensors)";

namespace {

namespace fs = std::filesystem;

std::string quote_arg(const std::string& a) {
    if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos) return a;
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string join_command_line(const std::vector<std::string>& argv) {
    std::string s;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        if (i > 0) s += ' ';
        s += quote_arg(argv[i]);
    }
    return s;
}

}  // namespace

// ---- contents ----

std::string predictions_csv(const TrainResult& r) {
    DT_CHECK(r.test_labels.size() == r.predictions.size(),
             "predictions_csv: ", r.test_labels.size(), " labels but ", r.predictions.size(),
             " predictions");
    std::string s = "index,label,predicted\n";
    s.reserve(s.size() + r.predictions.size() * 12);
    for (std::size_t i = 0; i < r.predictions.size(); ++i) {
        s += std::to_string(i) + ',' + std::to_string(r.test_labels[i]) + ',' +
             std::to_string(r.predictions[i]) + '\n';
    }
    return s;
}

nlohmann::ordered_json result_json(const TrainConfig& cfg, const TrainResult& r,
                                   const std::vector<std::string>& command_line) {
    using Json = nlohmann::ordered_json;
    Json j;
    j["detrain_version"] = version_string();
    j["recipe"] = kRecipeVersion;
    j["command_line"] = join_command_line(command_line);
    j["config"] = to_json(cfg);
    auto seed = [](const SourceSetting& s) { return s.is_off() ? Json("off") : Json(s.seed); };
    j["seeds"] = Json{{"init", seed(cfg.noise.init)},
                      {"shuffle", seed(cfg.noise.shuffle)},
                      {"augment", seed(cfg.noise.augment)},
                      {"dropout", seed(cfg.noise.dropout)}};
    Json noise = to_json(cfg.noise);
    noise["threads"] = r.threads;
    j["noise"] = noise;
    j["threads"] = r.threads;
    j["isa"] = r.isa;
    j["device"] = r.device;
    j["processes"] = r.processes;
    j["micro_batch"] = cfg.micro_batch;
    j["allreduce"] = r.allreduce;
    j["allreduce_why"] = r.allreduce_why.empty() ? Json(nullptr) : Json(r.allreduce_why);
    j["bytes_sent_per_step"] = r.bytes_sent_per_step;
    j["gradient_buckets"] = r.gradient_buckets;
    j["dataset"] = Json{{"name", cfg.dataset},
                        {"dir", cfg.data_dir},
                        {"train_size", r.info.train_size},
                        {"test_size", r.info.test_size},
                        {"image_shape", {r.info.channels, r.info.height, r.info.width}},
                        {"num_classes", r.info.num_classes},
                        {"class_names", r.class_names}};
    j["model"] = cfg.model;
    j["epochs"] = cfg.epochs;
    j["steps_per_epoch"] = r.info.steps_per_epoch;
    Json history = Json::array();
    for (const EpochStats& e : r.history) {
        Json h{{"epoch", e.epoch},
               {"train_loss", e.train_loss},
               {"test_accuracy", e.test_accuracy},
               {"seconds", e.seconds},
               {"train_seconds", e.train_seconds},
               {"images_per_second", e.images_per_second}};
        if (std::isfinite(e.validation_loss)) {  // a language model: per validation token
            h["validation_loss"] = e.validation_loss;
            h["bits_per_byte"] = e.bits_per_byte;
        }
        history.push_back(h);
    }
    j["history"] = history;
    j["final_train_loss"] = r.final_train_loss;
    j["test_accuracy"] = r.test_accuracy;
    Json per_class = Json::object();
    for (std::size_t c = 0; c < r.per_class_accuracy.size(); ++c) {
        const double a = r.per_class_accuracy[c];
        per_class[r.class_names.at(c)] = std::isfinite(a) ? Json(a) : Json(nullptr);
    }
    j["per_class_accuracy"] = per_class;
    j["weights_sha256"] = r.weights_sha256;
    j["weights_sha256_order"] = kWeightsHashOrder;
    if (!cfg.replay.empty()) {
        j["replay_of"] = Json{{"file", cfg.replay},
                              {"weights_sha256", cfg.replay_of_sha256},
                              {"matches", r.weights_sha256 == cfg.replay_of_sha256}};
    }
    j["num_parameters"] = r.num_parameters;
    j["wall_time_seconds"] = r.wall_time_seconds;
    j["images_per_second"] = r.images_per_second;
    j["peak_rss_bytes"] = r.peak_rss_bytes;
    if (r.device_peak_bytes >= 0) j["device_peak_bytes"] = r.device_peak_bytes;
    j["files"] = Json{{"result", "result.json"},
                      {"predictions", "predictions.csv"},
                      {"weights", "weights.safetensors"},
                      {"test_logits", "test_logits.safetensors"}};
    return j;
}

// ---- writing ----

RunFiles write_run_outputs(const TrainConfig& cfg, const TrainResult& r,
                           const std::vector<std::string>& command_line) {
    DT_CHECK(r.model != nullptr, "write_run_outputs: the result holds no model");
    io::prepare_output_dir(cfg.out);
    const fs::path dir(cfg.out);
    RunFiles files{(dir / "result.json").string(), (dir / "predictions.csv").string(),
                   (dir / "weights.safetensors").string(),
                   (dir / "test_logits.safetensors").string()};

    io::Metadata meta{{"format", "pt"},
                      {"detrain_version", version_string()},
                      {"recipe", std::to_string(kRecipeVersion)},
                      {"model", cfg.model},
                      {"weights_sha256", r.weights_sha256},
                      {"weights_sha256_order", kWeightsHashOrder},
                      {"config", to_json(cfg).dump()}};
    // All four are written before any is replaced: a failure (a full disk) leaves the previous
    // run's files as they were, and result.json, which names the others, goes last.
    io::AtomicFileSet set;
    set.add(files.weights, io::encode_safetensors(model_named_tensors(*r.model), meta));
    set.add(files.predictions_csv, predictions_csv(r));
    const auto test_size = static_cast<int64_t>(r.predictions.size());
    const int64_t classes = r.info.num_classes;
    DT_CHECK(static_cast<int64_t>(r.test_logits.size()) == test_size * classes,
             "write_run_outputs: ", r.test_logits.size(), " logits for ", test_size,
             " test examples and ", classes, " classes");
    set.add(
        files.test_logits,
        io::encode_safetensors(
            {{"logits", Tensor::from_vector({test_size, classes}, r.test_logits)}},
            {{"detrain_version", version_string()}, {"order", "test examples in data-set order"}}));
    set.add(files.result_json, result_json(cfg, r, command_line).dump(2) + "\n");
    set.commit();
    return files;
}

void print_summary(std::FILE* out, const TrainResult& r, const RunFiles& files) {
    char device_memory[64] = "";  // " host, 300 MiB cuda" for a run on a device
    if (r.device_peak_bytes >= 0) {
        std::snprintf(device_memory, sizeof device_memory, " host, %.0f MiB %s",
                      static_cast<double>(r.device_peak_bytes) / (1 << 20), r.device.c_str());
    }
    std::fprintf(
        out,
        "test accuracy   %.2f%% (%lld test examples)\n"
        "final loss      %.4f (train, last epoch)\n"
        "weights_sha256  %s\n"
        "time            %.1f s, %.0f training images/s, %d threads, peak memory %.0f MiB%s\n"
        "files           %s\n"
        "                %s\n"
        "                %s\n"
        "                %s\n",
        100.0 * r.test_accuracy, static_cast<long long>(r.info.test_size), r.final_train_loss,
        r.weights_sha256.c_str(), r.wall_time_seconds, r.images_per_second, r.threads,
        static_cast<double>(r.peak_rss_bytes) / (1 << 20), device_memory, files.result_json.c_str(),
        files.predictions_csv.c_str(), files.weights.c_str(), files.test_logits.c_str());
    std::fflush(out);
}

}  // namespace dt
