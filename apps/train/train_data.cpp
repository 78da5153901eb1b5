// SPDX-License-Identifier: MIT
// Loading a run's data (contract in train_data.h).
#include "apps/train/train_data.h"

#include <memory>
#include <mutex>

#include "apps/train/trainer.h"
#include "datasets/subset.h"
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
    DatasetSplits data;
    try {
        const std::lock_guard<std::mutex> lock(g_cache.mu);
        const std::string key = cfg.dataset + '\n' + data_dir;
        if (!g_cache.on) {
            data = load_dataset(cfg.dataset, data_dir);
        } else {
            if (g_cache.data == nullptr || g_cache.key != key) {
                g_cache.data =
                    std::make_shared<const DatasetSplits>(load_dataset(cfg.dataset, data_dir));
                g_cache.key = key;
            }
            data = *g_cache.data;
        }
    } catch (const IoError& e) {
        throw IoError(
            str("cannot load ", cfg.dataset, " from --data-dir ", data_dir, ": ", e.what()));
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

void keep_loaded_dataset(bool on) {
    const std::lock_guard<std::mutex> lock(g_cache.mu);
    g_cache.on = on;
    if (!on) g_cache.data.reset();
}

}  // namespace dt
