// SPDX-License-Identifier: MIT
// Checkpoint files (apps/train/checkpoint.h): exact round trip of the position and every tensor,
// refusal of corrupt, truncated, foreign and mismatched files with messages naming the file and
// the fault, and a failed write (a full disk: the temporary file is /dev/full) that leaves the
// previous checkpoint in place.
#include "apps/train/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "models/model_io.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/temp_dir.h"
#include "tests/support/train_args.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

struct Trainee {
    std::unique_ptr<Model> model;
    std::unique_ptr<Optimizer> optimizer;
};

Trainee make_trainee(const std::string& model, const std::string& optimizer, uint64_t seed) {
    ModelConfig mc;
    mc.name = model;
    Trainee t;
    t.model = make_model(mc);
    t.model->init(InitScheme::kGlorotUniform, seed);
    OptimizerConfig oc;
    oc.kind = optimizer;
    t.optimizer = make_optimizer(oc, t.model->trainable());
    // Non-zero optimizer state: every state tensor filled with a value of its own (and seed's).
    int i = 1;
    for (auto& [name, s] : t.optimizer->state()) {
        if (s.dtype() == DType::kF32) s.fill(0.25f * static_cast<float>(i++) + 1e-3f * seed);
    }
    return t;
}

/// The bytes of a float32 or int64 tensor.
const void* raw(const Tensor& t) {
    if (t.dtype() == DType::kI64) return t.data<int64_t>();
    return t.f32();
}

TrainPosition some_position() {
    TrainPosition p;
    p.epoch = 1;
    p.batch = 7;
    p.global_step = 20;
    p.epoch_loss_sum = 1.0 / 3.0 + 1e-17;  // not a short decimal
    p.epoch_images = 224;
    p.epoch_train_seconds = 0.125;
    p.train_seconds_all = 2.5;
    p.train_images_all = 416;
    EpochStats s;
    s.epoch = 1;
    s.train_loss = 2.0 / 7.0;
    s.test_accuracy = 0.6875;
    s.seconds = 3.0;
    s.train_seconds = 2.5;
    s.images_per_second = 166.4;
    p.history.push_back(s);
    return p;
}

class CheckpointFile : public ::testing::Test {
 protected:
    CheckpointFile() : dir_("detrain-ckpt-") {
        cfg_ = test::parse_train("--out " + dir_.path.string() + " --seed 9");
        trainee_ = make_trainee("smallcnn", "adam", 1);
    }
    void save() {
        const ScopedReduceConfig scope(reduce_site_specs(cfg_.noise));
        set_reduce_call_count(ReduceSite::kConvWgrad, 123);
        save_checkpoint(cfg_, *trainee_.model, *trainee_.optimizer, some_position());
    }
    std::string path() const { return checkpoint_path(dir_.path.string()); }

    /// The IoError text of read_checkpoint ("" when it reads).
    std::string read_error() const {
        try {
            read_checkpoint(dir_.path.string());
        } catch (const IoError& e) {
            return e.what();
        }
        return "";
    }

    test::TempDir dir_;
    TrainConfig cfg_;
    Trainee trainee_;
};

TEST_F(CheckpointFile, RoundTripIsExact) {
    save();
    const Checkpoint ck = read_checkpoint(dir_.path.string());
    const TrainPosition want = some_position();
    EXPECT_EQ(ck.position.epoch, want.epoch);
    EXPECT_EQ(ck.position.batch, want.batch);
    EXPECT_EQ(ck.position.global_step, want.global_step);
    EXPECT_EQ(std::memcmp(&ck.position.epoch_loss_sum, &want.epoch_loss_sum, 8), 0);
    EXPECT_EQ(ck.position.train_images_all, want.train_images_all);
    ASSERT_EQ(ck.position.history.size(), 1u);
    EXPECT_EQ(std::memcmp(&ck.position.history[0].train_loss, &want.history[0].train_loss, 8), 0);
    EXPECT_EQ(ck.position.history[0].test_accuracy, want.history[0].test_accuracy);
    EXPECT_EQ(ck.config.at("seed-init"), 9);
    EXPECT_EQ(ck.noise, nlohmann::json::parse(to_json(cfg_.noise).dump()));

    Trainee fresh = make_trainee("smallcnn", "adam", 2);  // other weights, other state
    const ScopedReduceConfig scope(reduce_site_specs(cfg_.noise));
    restore_checkpoint(ck, *fresh.model, *fresh.optimizer);
    const io::NamedTensors a = model_named_tensors(*trainee_.model);
    const io::NamedTensors b = model_named_tensors(*fresh.model);
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(std::memcmp(a[i].second.f32(), b[i].second.f32(), a[i].second.nbytes()), 0)
            << a[i].first;
    }
    const auto sa = trainee_.optimizer->state(), sb = fresh.optimizer->state();
    for (std::size_t i = 0; i < sa.size(); ++i) {
        EXPECT_EQ(std::memcmp(raw(sa[i].second), raw(sb[i].second), sa[i].second.nbytes()), 0)
            << sa[i].first;
    }
    EXPECT_EQ(reduce_call_count(ReduceSite::kConvWgrad), 123u);
}

TEST_F(CheckpointFile, AFlippedBitAnywhereFailsTheChecksum) {
    save();
    std::string bytes = test::slurp(path());
    // One bit in the tensor data (near the end) and one in a metadata value.
    for (std::size_t at : {bytes.size() - 5, bytes.find("\"global_step\":\"20\"") + 15}) {
        std::string bad = bytes;
        bad[at] = static_cast<char>(bad[at] ^ 0x01);
        std::ofstream(path(), std::ios::binary | std::ios::trunc) << bad;
        const std::string e = read_error();
        EXPECT_NE(e.find("is corrupt: its checksum does not match"), std::string::npos) << e;
        EXPECT_NE(e.find(path()), std::string::npos) << e;
    }
}

TEST_F(CheckpointFile, TruncatedForeignAndMissingFilesAreRefused) {
    EXPECT_NE(read_error().find("--checkpoint-every"), std::string::npos);  // none yet
    save();
    const std::string bytes = test::slurp(path());
    std::ofstream(path(), std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
    std::string e = read_error();
    EXPECT_NE(e.find(path()), std::string::npos) << e;
    EXPECT_FALSE(e.empty());
    save_model_safetensors(*trainee_.model, path(), {{"format", "pt"}});  // a weights file
    e = read_error();
    EXPECT_NE(e.find("format is 'pt', expected 'detrain-checkpoint'"), std::string::npos) << e;
}

TEST_F(CheckpointFile, MismatchedModelOrOptimizerChangesNothing) {
    save();
    const Checkpoint ck = read_checkpoint(dir_.path.string());
    Trainee sgd = make_trainee("smallcnn", "sgd", 2);
    const std::vector<float> before = sgd.model->trainable()[0].to_vector();
    try {
        restore_checkpoint(ck, *sgd.model, *sgd.optimizer);
        ADD_FAILURE() << "an adam checkpoint was restored into sgd";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("optimizer state"), std::string::npos) << e.what();
    }
    EXPECT_EQ(sgd.model->trainable()[0].to_vector(), before);
    Trainee bn = make_trainee("smallcnn-bn", "adam", 2);
    EXPECT_THROW(restore_checkpoint(ck, *bn.model, *bn.optimizer), Error);
}

TEST_F(CheckpointFile, AFullDiskLeavesThePreviousCheckpoint) {
    save();
    const std::string good = test::slurp(path());
    // The next write goes to <path>.tmp: make that /dev/full, where every write fails ENOSPC.
    fs::create_symlink("/dev/full", path() + ".tmp");
    try {
        save();
        ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(path()), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::slurp(path()), good);
    EXPECT_FALSE(fs::exists(fs::symlink_status(path() + ".tmp")));
    read_checkpoint(dir_.path.string());  // still valid
}

}  // namespace
}  // namespace dt
