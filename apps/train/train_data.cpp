// SPDX-License-Identifier: MIT
// Loading a run's data (contract in train_data.h).
#include "apps/train/train_data.h"

#include <memory>
#include <mutex>

#include "apps/train/trainer.h"
#include "datasets/subset.h"
#include "datasets/text_corpus.h"
#include "engine/core/error.h"

namespace dt {

namespace {

/// The last data set read, kept while keep_loaded_dataset(true) (trainer.h).
struct DatasetCache {
    std::mutex mu;
    bool on = false;
    std::string key;
    std::shared_ptr<const DatasetSplits> data;
};
DatasetCache g_cache;

}  // namespace

DatasetSplits load_splits(const TrainRecipe& cfg, const std::string& data_dir) {
    const bool text = cfg.dataset == "text";
    // A corpus's windows depend on the context (datasets/text_corpus.h); its errors name the file.
    auto load = [&] {
        return text ? text_dataset(load_text_corpus(data_dir, cfg.context), cfg.context)
                    : load_dataset(cfg.dataset, data_dir);
    };
    DatasetSplits data;
    try {
        const std::lock_guard<std::mutex> lock(g_cache.mu);
        const std::string key =
            cfg.dataset + '\n' + data_dir + '\n' + std::to_string(text ? cfg.context : 0);
        if (!g_cache.on) {
            data = load();
        } else {
            if (g_cache.data == nullptr || g_cache.key != key) {
                g_cache.data = std::make_shared<const DatasetSplits>(load());
                g_cache.key = key;
            }
            data = *g_cache.data;
        }
    } catch (const IoError& e) {
        throw IoError(
            text ? str("--data-file: ", e.what())
                 : str("cannot load ", cfg.dataset, " from --data-dir ", data_dir, ": ", e.what()));
    }
    limit_dataset(data.train, cfg.limit_train);
    limit_dataset(data.test, cfg.limit_test);
    if (!cfg.imbalance.empty()) {
        try {
            keep_fraction_of_class(data.train, cfg.imbalance_class(), cfg.imbalance_fraction());
        } catch (const ValueError& e) {
            throw ValueError(str("--imbalance ", cfg.imbalance, ": ", e.what()));
        }
    }
    DT_CHECK_VALUE(data.train.size > 0, "data set ", cfg.dataset, " in ", data_dir,
                   " has no training examples");
    return data;
}

void check_text_corpus(const TrainRecipe& cfg, const std::string& data_file) {
    if (cfg.dataset != "text") return;
    try {
        (void)text_dataset(load_text_corpus(data_file, cfg.context), cfg.context);
    } catch (const IoError& e) {
        throw IoError(str("--data-file: ", e.what()));  // e names the file
    }
}

void keep_loaded_dataset(bool on) {
    const std::lock_guard<std::mutex> lock(g_cache.mu);
    g_cache.on = on;
    if (!on) g_cache.data.reset();
}

}  // namespace dt
