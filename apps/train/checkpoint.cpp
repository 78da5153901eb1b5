// SPDX-License-Identifier: MIT
// Checkpoint files of `detrain train` (contents and guarantees in checkpoint.h).
#include "apps/train/checkpoint.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "apps/common/version.h"
#include "engine/core/error.h"
#include "engine/io/sha256.h"
#include "engine/noise/reduce_sites.h"
#include "models/model_io.h"

namespace dt {

namespace {

constexpr const char* kFormat = "detrain-checkpoint";
constexpr const char* kFormatVersion = "1";
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimPrefix = "optim.";
constexpr const char* kReduceCalls = "run.reduce_calls";

/// A double as a C99 hex float: exact, and readable back by strtod.
std::string hex_double(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", v);
    return buf;
}

nlohmann::json history_json(const std::vector<EpochStats>& history) {
    nlohmann::json a = nlohmann::json::array();
    for (const EpochStats& s : history) {
        nlohmann::json e{{"epoch", s.epoch},
                         {"train_loss", hex_double(s.train_loss)},
                         {"test_accuracy", hex_double(s.test_accuracy)},
                         {"seconds", s.seconds},
                         {"train_seconds", s.train_seconds},
                         {"images_per_second", s.images_per_second}};
        if (std::isfinite(s.validation_loss)) {  // a language model's
            e["validation_loss"] = hex_double(s.validation_loss);
            e["bits_per_byte"] = hex_double(s.bits_per_byte);
        }
        a.push_back(e);
    }
    return a;
}

/// SHA-256 of the file that save_checkpoint writes for these tensors and this metadata when it
/// has no "checksum" key.
std::string content_checksum(const io::NamedTensors& tensors, io::Metadata metadata) {
    metadata.erase("checksum");
    return "sha256:" + io::sha256_hex(io::encode_safetensors(tensors, metadata));
}

/// Reads metadata values of one checkpoint, naming the file and the key in every error.
struct MetaReader {
    const std::string& path;
    const io::Metadata& meta;

    const std::string& text(const char* key) const {
        const auto it = meta.find(key);
        DT_CHECK_IO(it != meta.end(), "checkpoint ", path, ": the metadata has no '", key,
                    "' (not a checkpoint of this detrain version?)");
        return it->second;
    }
    [[noreturn]] void bad(const char* key, const char* expected) const {
        throw IoError(str("checkpoint ", path, ": metadata '", key, "' is '", text(key),
                          "', expected ", expected));
    }
    int64_t integer(const char* key) const {
        const std::string& t = text(key);
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(t.c_str(), &end, 10);
        if (t.empty() || *end != '\0' || errno != 0 || v < 0) bad(key, "an integer >= 0");
        return v;
    }
    double real(const char* key) const { return real_text(key, text(key)); }
    double real_text(const char* key, const std::string& t) const {
        char* end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        if (t.empty() || *end != '\0') bad(key, "a number");
        return v;
    }
    nlohmann::json json(const char* key) const {
        try {
            return nlohmann::json::parse(text(key));
        } catch (const nlohmann::json::exception& e) {
            throw IoError(
                str("checkpoint ", path, ": metadata '", key, "' is not JSON (", e.what(), ")"));
        }
    }
};

std::vector<EpochStats> read_history(const MetaReader& r) {
    const nlohmann::json a = r.json("history");
    std::vector<EpochStats> out;
    try {
        for (const nlohmann::json& e : a) {
            EpochStats s;
            s.epoch = e.at("epoch").get<int>();
            s.train_loss = r.real_text("history", e.at("train_loss").get<std::string>());
            s.test_accuracy = r.real_text("history", e.at("test_accuracy").get<std::string>());
            s.seconds = e.at("seconds").get<double>();
            s.train_seconds = e.at("train_seconds").get<double>();
            s.images_per_second = e.at("images_per_second").get<double>();
            if (e.contains("validation_loss")) {
                s.validation_loss =
                    r.real_text("history", e.at("validation_loss").get<std::string>());
                s.bits_per_byte = r.real_text("history", e.at("bits_per_byte").get<std::string>());
            }
            out.push_back(s);
        }
    } catch (const nlohmann::json::exception& e) {
        throw IoError(
            str("checkpoint ", r.path, ": metadata 'history' is malformed (", e.what(), ")"));
    }
    return out;
}

}  // namespace

std::string checkpoint_path(const std::string& dir) {
    return (std::filesystem::path(dir) / "checkpoint.safetensors").string();
}

void save_checkpoint(const TrainConfig& cfg, const Model& model, Optimizer& optimizer,
                     const TrainPosition& pos) {
    io::NamedTensors tensors;
    for (auto& [name, t] : model_named_tensors(model)) tensors.emplace_back(kModelPrefix + name, t);
    for (auto& [name, t] : optimizer.state())
        tensors.emplace_back(kOptimPrefix + name, t.to(Device::kCpu));  // from any device
    std::vector<int64_t> calls;
    for (ReduceSite s : all_reduce_sites())
        calls.push_back(static_cast<int64_t>(reduce_call_count(s)));
    tensors.emplace_back(kReduceCalls,
                         Tensor::from_vector_i64({static_cast<int64_t>(calls.size())}, calls));
    io::Metadata meta{{"format", kFormat},
                      {"format_version", kFormatVersion},
                      {"detrain_version", version_string()},
                      {"recipe", std::to_string(kRecipeVersion)},
                      {"config", to_json(cfg).dump()},
                      {"noise", to_json(cfg.noise).dump()},
                      {"epoch", std::to_string(pos.epoch)},
                      {"batch", std::to_string(pos.batch)},
                      {"global_step", std::to_string(pos.global_step)},
                      {"epoch_loss_sum", hex_double(pos.epoch_loss_sum)},
                      {"epoch_images", std::to_string(pos.epoch_images)},
                      {"epoch_train_seconds", hex_double(pos.epoch_train_seconds)},
                      {"train_seconds_all", hex_double(pos.train_seconds_all)},
                      {"train_images_all", std::to_string(pos.train_images_all)},
                      {"history", history_json(pos.history).dump()}};
    meta["checksum"] = content_checksum(tensors, meta);
    io::save_safetensors(checkpoint_path(cfg.out), tensors, meta);
}

Checkpoint read_checkpoint(const std::string& dir) {
    Checkpoint ck;
    ck.path = checkpoint_path(dir);
    std::error_code ec;
    DT_CHECK_IO(std::filesystem::exists(ck.path, ec), "--resume ", dir, ": there is no ", ck.path,
                " (hint: checkpoints are written by a run started with "
                "--checkpoint-every N into its --out directory)");
    ck.file = io::load_safetensors(ck.path);
    const MetaReader r{ck.path, ck.file.metadata};
    DT_CHECK_IO(r.text("format") == kFormat, "checkpoint ", ck.path, ": format is '",
                r.text("format"), "', expected '", kFormat, "' (a weights file is no checkpoint)");
    DT_CHECK_IO(r.text("format_version") == kFormatVersion, "checkpoint ", ck.path,
                ": format_version ", r.text("format_version"), " is not supported (this detrain",
                " reads version ", kFormatVersion, ")");
    const std::string want = content_checksum(ck.file.tensors, ck.file.metadata);
    DT_CHECK_IO(r.text("checksum") == want, "checkpoint ", ck.path,
                " is corrupt: its checksum does not match its contents (stored ",
                r.text("checksum"), ", computed ", want,
                "); it cannot be resumed (hint: restore it from a backup or start the run anew)");
    // Checkpoints from before the recipe was recorded are recipe 1 (the first numbered one).
    const std::string recipe =
        ck.file.metadata.count("recipe") ? r.text("recipe") : std::string("1");
    DT_CHECK_IO(recipe == std::to_string(kRecipeVersion), "checkpoint ", ck.path,
                " was written by a detrain with training recipe ", recipe,
                ", this one trains "
                "recipe ",
                kRecipeVersion,
                ": the resumed run would give the bits of neither "
                "(hint: finish the run with the detrain that started it, or start it anew)");
    ck.config = r.json("config");
    ck.noise = r.json("noise");
    TrainPosition& p = ck.position;
    p.epoch = static_cast<int>(r.integer("epoch"));
    p.batch = r.integer("batch");
    p.global_step = r.integer("global_step");
    p.epoch_loss_sum = r.real("epoch_loss_sum");
    p.epoch_images = r.integer("epoch_images");
    p.epoch_train_seconds = r.real("epoch_train_seconds");
    p.train_seconds_all = r.real("train_seconds_all");
    p.train_images_all = r.integer("train_images_all");
    p.history = read_history(r);
    DT_CHECK_IO(static_cast<int>(p.history.size()) == p.epoch, "checkpoint ", ck.path, ": ",
                p.history.size(), " finished epochs in 'history' but the position is epoch ",
                p.epoch);
    return ck;
}

void restore_checkpoint(const Checkpoint& ck, Model& model, Optimizer& optimizer) {
    const std::string what = "checkpoint " + ck.path;
    io::SafetensorsFile model_part;
    std::set<std::string> optim_names;
    for (const auto& [name, t] : ck.file.tensors) {
        if (name.rfind(kModelPrefix, 0) == 0) {
            model_part.tensors.emplace_back(name.substr(std::string(kModelPrefix).size()), t);
        } else if (name.rfind(kOptimPrefix, 0) == 0) {
            optim_names.insert(name.substr(std::string(kOptimPrefix).size()));
        } else {
            DT_CHECK_IO(name == kReduceCalls, what, ": unexpected tensor '", name, "' ", t.str());
        }
    }
    // Everything is checked before load_model_params copies the model, so that a mismatch
    // changes nothing; the model first, whose names say most about a wrong file.
    for (const NamedParam& p : model.params()) {
        const Tensor* src = ck.file.find(kModelPrefix + p.name);
        DT_CHECK_IO(src != nullptr, what, ": ", model.name(), " parameter '", p.name, "' (",
                    p.tensor.str(),
                    ") is missing (hint: was the run trained with another "
                    "--model or data set?)");
        DT_CHECK_SHAPE(src->dtype() == p.tensor.dtype() && src->shape() == p.tensor.shape(), what,
                       ": ", model.name(), " parameter '", p.name, "' is ", src->str(),
                       ", expected ", p.tensor.str(),
                       " (hint: was the run trained with "
                       "another --model or data set?)");
    }
    const auto state = optimizer.state();
    for (const auto& [name, t] : state) {
        const Tensor* src = ck.file.find(kOptimPrefix + name);
        DT_CHECK_IO(src != nullptr, what, ": optimizer state '", name, "' (", t.str(),
                    ") is missing (hint: was the run trained with another --optimizer?)");
        DT_CHECK_SHAPE(src->dtype() == t.dtype() && src->shape() == t.shape(), what,
                       ": optimizer state '", name, "' is ", src->str(), ", expected ", t.str());
        optim_names.erase(name);
    }
    DT_CHECK_IO(optim_names.empty(), what, ": unexpected optimizer state '",
                optim_names.empty() ? "" : *optim_names.begin(),
                "' (hint: was the run trained with another --optimizer?)");
    const Tensor* calls = ck.file.find(kReduceCalls);
    // Checkpoints from before grad.allreduce, or before the GPT sites, hold fewer counts: the
    // sites appended since were never called (sites are appended, never reordered).
    const int64_t sites_stored = calls != nullptr && calls->ndim() == 1 ? calls->dim(0) : -1;
    constexpr int64_t kOldest = static_cast<int64_t>(ReduceSite::kGradAllreduce);
    DT_CHECK_IO(calls != nullptr && calls->dtype() == DType::kI64 && sites_stored >= kOldest &&
                    sites_stored <= kNumReduceSites,
                what, ": '", kReduceCalls, "' must be int64[", kNumReduceSites, "], found ",
                calls ? calls->str() : std::string("nothing"));
    load_model_params(model, model_part, what);
    for (const auto& [name, t] : state) {
        Tensor dst = t;  // shares storage with the optimizer
        dst.copy_from(*ck.file.find(kOptimPrefix + name));
    }
    const int64_t* c = calls->data<int64_t>();
    for (ReduceSite s : all_reduce_sites()) {
        const int i = static_cast<int>(s);
        set_reduce_call_count(s, i < sites_stored ? static_cast<uint64_t>(c[i]) : 0u);
    }
}

}  // namespace dt
