// SPDX-License-Identifier: MIT
// `detrain generate` (contract in generate_cmd.h): the record -> the model and its weights -> the
// run's reduction modes -> generate() -> stdout.
#include "apps/generate/generate_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/train/train_config.h"
#include "apps/train/train_record.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/noise/noise_config.h"
#include "engine/noise/reduce_sites.h"
#include "engine/runtime/threads.h"
#include "models/generate.h"
#include "models/model_io.h"
#include "models/weights_hash.h"

namespace dt {

namespace fs = std::filesystem;

CLI::App* add_generate_command(CLI::App& app, GenerateFlags& f) {
    CLI::App* g = app.add_subcommand(
        "generate",
        "Continue a text with a trained GPT (detrain train --model gpt): a KV cache, the run's "
        "reduction modes, and each step's logits the training forward's bits");
    g->add_option("--from", f.from, "The run's directory (its --out: result.json, weights)")
        ->required()
        ->type_name("DIR");
    g->add_option("--prompt", f.prompt, "The text to continue (its bytes)")->required();
    g->add_option("--tokens", f.tokens, "New bytes to generate")->capture_default_str();
    g->add_option("--temperature", f.temperature,
                  "Sampling temperature; 0 = greedy (the likeliest byte each step)")
        ->capture_default_str();
    g->add_option("--seed", f.seed, "Seed of the sampling stream: the same seed, the same text")
        ->capture_default_str();
    g->add_option("--device", f.device, "Where the model runs (cpu|cuda)")->capture_default_str();
    g->add_option("--threads", f.threads, "CPU threads (0: all cores); no bit depends on it");
    g->add_flag("--json", f.json,
                "Print one JSON object: the text, the new bytes and their log-probabilities");
    g->footer("Example: detrain generate --from runs/gpt --prompt 'LOVE, n.' --tokens 300");
    return g;
}

int run_generate_command(const GenerateFlags& f) {
    DT_CHECK_VALUE(f.tokens >= 0 && f.tokens <= (int64_t{1} << 24), "--tokens ", f.tokens,
                   " (expected 0 to 2^24)");
    DT_CHECK_VALUE(!f.prompt.empty(), "--prompt is empty (hint: give at least one byte)");
    DT_CHECK_VALUE(f.device == "cpu" || f.device == "cuda", "--device ", f.device,
                   " (expected cpu or cuda)");
    const std::string record_path = (fs::path(f.from) / "result.json").string();
    const nlohmann::json record = read_record(record_path);
    DT_CHECK_VALUE(record.is_object() && record.contains("config") && record.contains("noise"),
                   record_path, ": not a detrain result.json (no config or noise)");
    const TrainConfig c = recorded_config("--from " + record_path, record.at("config"),
                                          record.at("noise"), TrainConfig{}, {});
    DT_CHECK_VALUE(c.model == "gpt", record_path, ": a ", c.model,
                   " run; generate needs a gpt run (detrain train --model gpt)");
    if (f.threads > 0) set_num_threads(f.threads);
    const Device device = device_from_name(f.device);
    if (device != Device::kCpu) require_device(device);
    GPT model(model_config(c, dataset_geometry(c.dataset)));
    load_model_safetensors(model, (fs::path(f.from) / "weights.safetensors").string());
    model.to(device);
    // The run's modes at every site, counters from 0 (permuted keys count calls).
    const ScopedReduceConfig modes(reduce_site_specs(c.noise));
    std::vector<int64_t> bytes;
    for (unsigned char b : f.prompt) bytes.push_back(b);
    const Generation g = generate(model, bytes, {f.tokens, f.temperature, f.seed});
    std::string text;
    for (int64_t t : g.tokens) text += static_cast<char>(t);
    if (f.json) {
        nlohmann::ordered_json j;
        j["from"] = f.from;
        j["weights_sha256"] = weights_sha256(model);
        j["prompt"] = f.prompt;
        j["temperature"] = f.temperature;
        j["seed"] = f.seed;
        j["text"] = text;  // bytes that are not UTF-8 print as U+FFFD
        j["tokens"] = g.tokens;
        j["log_probs"] = g.log_probs;
        j["context_restarts"] = g.restarts;
        std::printf("%s\n",
                    j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::fwrite(f.prompt.data(), 1, f.prompt.size(), stdout);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::printf("\n");
    }
    return 0;
}

}  // namespace dt
