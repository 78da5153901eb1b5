// SPDX-License-Identifier: MIT
// Flags of `detrain train`: defaults, seed resolution, validation messages (flag + value), JSON.
#include "apps/train/train_config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/error.h"
#include "tests/support/train_args.h"

namespace dt {
namespace {

using test::parse_train, test::parse_train_error;

TEST(TrainConfig, DefaultsAreTheZhuangRecipe) {
    const TrainConfig c = parse_train("");
    EXPECT_EQ(c.model, "smallcnn");
    EXPECT_EQ(c.dataset, "fashion-mnist");
    EXPECT_EQ(c.optimizer, "adam");
    EXPECT_DOUBLE_EQ(c.lr, 4e-4);
    EXPECT_EQ(c.batch_size, 128);
    EXPECT_EQ(c.epochs, 10);
    EXPECT_EQ(c.init, "glorot");
    EXPECT_EQ(c.normalize, "unit");
    EXPECT_EQ(c.augment, "none");
    EXPECT_EQ(c.schedule, "constant");
    EXPECT_EQ(c.eval_batch_size, 1000);
    EXPECT_GE(c.threads, 1);
    EXPECT_EQ(c.data_dir, "/usr/share/datasets/fashion-mnist");
    EXPECT_EQ(c.out, "runs/smallcnn-fashion-mnist");
    EXPECT_EQ(c.init_seed(), 0u);
    EXPECT_EQ(c.dropout_seed(), 0u);
}

TEST(TrainConfig, DerivedDefaultsFollowModelAndDataset) {
    const TrainConfig c = parse_train("--model resnet18 --dataset cifar10");
    EXPECT_EQ(c.data_dir, "/usr/share/datasets/cifar10");
    EXPECT_EQ(c.out, "runs/resnet18-cifar10");
    const TrainConfig d = parse_train("--data-dir /tmp/x --out /tmp/y");
    EXPECT_EQ(d.data_dir, "/tmp/x");
    EXPECT_EQ(d.out, "/tmp/y");
}

TEST(TrainConfig, GptHasItsOwnDefaultsAndGivenFlagsWin) {
    const TrainConfig c = parse_train("--model gpt");
    EXPECT_EQ(c.dataset, "text");
    EXPECT_EQ(c.data_dir, "/usr/share/dictd/devil.dict.dz");
    EXPECT_EQ(c.out, "runs/gpt-text");
    EXPECT_EQ(c.optimizer, "adamw");
    EXPECT_EQ(c.schedule, "cosine");
    EXPECT_EQ(c.layers, 4);
    EXPECT_EQ(c.heads, 4);
    EXPECT_EQ(c.width, 128);
    EXPECT_EQ(c.context, 128);
    // A flag given before --model or after it keeps its value.
    for (const char* args : {"--batch-size 4 --lr 0.01 --model gpt --data-file x.txt",
                             "--model gpt --batch-size 4 --lr 0.01 --data-file x.txt"}) {
        const TrainConfig g = parse_train(args);
        EXPECT_EQ(g.batch_size, 4) << args;
        EXPECT_EQ(g.lr, 0.01) << args;
        EXPECT_EQ(g.data_dir, "x.txt") << args;
    }
    // The image models keep the Zhuang recipe.
    EXPECT_EQ(parse_train("--model smallcnn").optimizer, "adam");
}

TEST(TrainConfig, GptFlagsAreChecked) {
    EXPECT_NE(parse_train_error("--model gpt --dataset mnist").find("--dataset"),
              std::string::npos);
    EXPECT_NE(parse_train_error("--dataset text").find("--model gpt"), std::string::npos);
    EXPECT_NE(parse_train_error("--model gpt --heads 3").find("--width"), std::string::npos);
    EXPECT_NE(parse_train_error("--model gpt --layers 0").find("--layers"), std::string::npos);
    EXPECT_NE(parse_train_error("--model gpt --context 0").find("--context"), std::string::npos);
    EXPECT_NE(parse_train_error("--model gpt --augment flip").find("--augment"), std::string::npos);
    EXPECT_NE(parse_train_error("--model gpt --imbalance 3:0.5").find("--imbalance"),
              std::string::npos);
}

TEST(TrainConfig, LastOfARepeatedFlagWins) {
    const TrainConfig c = parse_train("--epochs 3 --lr 0.1 --epochs 5");
    EXPECT_EQ(c.epochs, 5);
    EXPECT_DOUBLE_EQ(c.lr, 0.1);
}

TEST(TrainConfig, SeedSetsAllFour) {
    const TrainConfig c = parse_train("--seed 7");
    EXPECT_EQ(c.init_seed(), 7u);
    EXPECT_EQ(c.shuffle_seed(), 7u);
    EXPECT_EQ(c.augment_seed(), 7u);
    EXPECT_EQ(c.dropout_seed(), 7u);
}

TEST(TrainConfig, IndividualSeedOverridesSeed) {
    // Either order on the command line: the individual flag wins.
    for (const char* args :
         {"--seed 7 --seed-init 3 --seed-dropout 9", "--seed-init 3 --seed-dropout 9 --seed 7"}) {
        SCOPED_TRACE(args);
        const TrainConfig c = parse_train(args);
        EXPECT_EQ(c.init_seed(), 3u);
        EXPECT_EQ(c.shuffle_seed(), 7u);
        EXPECT_EQ(c.augment_seed(), 7u);
        EXPECT_EQ(c.dropout_seed(), 9u);
    }
    const TrainConfig d = parse_train("--seed-shuffle 5 --seed-augment 6");
    EXPECT_EQ(d.init_seed(), 0u);
    EXPECT_EQ(d.shuffle_seed(), 5u);
    EXPECT_EQ(d.augment_seed(), 6u);
    EXPECT_EQ(d.dropout_seed(), 0u);
}

struct BadFlag {
    const char* args;
    const char* flag;
    const char* value;
};

TEST(TrainConfig, ValidationNamesFlagAndValue) {
    const BadFlag cases[] = {
        {"--lr=-1", "--lr", "-1"},
        {"--lr 0", "--lr", "0"},
        {"--batch-size 0", "--batch-size", "0"},
        {"--eval-batch-size 0", "--eval-batch-size", "0"},
        {"--epochs 0", "--epochs", "0"},
        {"--threads 0", "--threads", "0"},
        {"--model vgg", "--model", "vgg"},
        {"--dataset imagenet", "--dataset", "imagenet"},
        {"--optimizer rmsprop", "--optimizer", "rmsprop"},
        {"--schedule linear", "--schedule", "linear"},
        {"--init orthogonal", "--init", "orthogonal"},
        {"--augment rotate", "--augment", "rotate"},
        {"--normalize zscore", "--normalize", "zscore"},
        {"--progress fancy", "--progress", "fancy"},
        {"--kernel-size 4", "--kernel-size", "4"},
        {"--dropout 1", "--dropout", "1"},
        {"--dropout=-0.5", "--dropout", "-0.5"},
        {"--limit-train=-5", "--limit-train", "-5"},
        {"--limit-test=-1", "--limit-test", "-1"},
        {"--weight-decay=-0.1", "--weight-decay", "-0.1"},
        {"--crop-padding=-2", "--crop-padding", "-2"},
    };
    for (const BadFlag& b : cases) {
        SCOPED_TRACE(b.args);
        const std::string msg = parse_train_error(b.args);
        ASSERT_FALSE(msg.empty()) << "accepted";
        EXPECT_NE(msg.find(b.flag), std::string::npos) << msg;
        EXPECT_NE(msg.find(b.value), std::string::npos) << msg;
        EXPECT_NE(msg.find("expected"), std::string::npos) << msg;  // the valid range
    }
}

TEST(TrainConfig, ValidValuesPass) {
    EXPECT_EQ(
        parse_train_error("--model mediumcnn --kernel-size 7 --dropout 0.5 --optimizer sgd "
                          "--momentum 0.9 --nesterov --schedule cosine --warmup-epochs 1 "
                          "--augment crop+flip --normalize standard --init he --limit-train 10"),
        "");
}

TEST(TrainConfig, UnknownFlagIsAParseError) {
    EXPECT_THROW(parse_train("--learning-rate 0.1"), CLI::ParseError);
    EXPECT_THROW(parse_train("--epochs ten"), CLI::ParseError);
    // Seeds are plain decimals in [0, 2^64): no wrap-around of negatives, no saturation.
    EXPECT_THROW(parse_train("--seed=-3"), CLI::ParseError);
    EXPECT_THROW(parse_train("--seed-init 18446744073709551616"), CLI::ParseError);
    EXPECT_EQ(parse_train("--seed-init 18446744073709551615").init_seed(), 18446744073709551615ull);
}

TEST(TrainConfig, JsonHasEveryFlagAndResolvedSeeds) {
    const nlohmann::ordered_json j = to_json(parse_train("--seed 4 --seed-init 2 --lr 0.01"));
    EXPECT_EQ(j.at("model"), "smallcnn");
    EXPECT_DOUBLE_EQ(j.at("lr").get<double>(), 0.01);
    EXPECT_EQ(j.at("seed").get<uint64_t>(), 4u);
    EXPECT_EQ(j.at("seed-init").get<uint64_t>(), 2u);
    EXPECT_EQ(j.at("seed-shuffle").get<uint64_t>(), 4u);
    for (const char* key : {"kernel-size",  "dataset",        "data-dir",        "epochs",
                            "batch-size",   "optimizer",      "momentum",        "nesterov",
                            "weight-decay", "clip-grad-norm", "schedule",        "step-epochs",
                            "gamma",        "warmup-epochs",  "min-lr",          "init",
                            "dropout",      "augment",        "crop-padding",    "normalize",
                            "threads",      "seed-augment",   "seed-dropout",    "shuffle",
                            "limit-train",  "limit-test",     "eval-batch-size", "progress",
                            "out"}) {
        EXPECT_TRUE(j.contains(key)) << key;
    }
}

}  // namespace
}  // namespace dt
