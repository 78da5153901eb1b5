// SPDX-License-Identifier: MIT
// The noise flags of `detrain train` (apps/train/train_config.cpp): CLI11 checks with messages
// naming flag and value, finalize_train_config resolving them, result.json's "config" and its
// inverse, --replay's handling of the other flags (apps/train/train_record.h), and the trainer's
// noise helpers (apps/train/trainer_noise.h): init perturbation on a model, non-finite gradients
// named.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/train/train_cmd.h"
#include "apps/train/train_config.h"
#include "apps/train/train_record.h"
#include "apps/train/trainer_noise.h"
#include "engine/core/error.h"
#include "tests/support/train_args.h"

namespace dt {
namespace {

using test::parse_train, test::parse_train_error;

TEST(NoiseFlagsCli, DefaultsAndResolvedSeeds) {
    const TrainConfig c = parse_train("");
    EXPECT_EQ(c.noise, noise_config_from_flags({}));
    EXPECT_TRUE(c.shuffle_on());
    const TrainConfig r = parse_train("--seed random --seed-init 4");
    EXPECT_EQ(r.noise.shuffle.kind, SourceKind::kRandom);
    EXPECT_TRUE(r.noise.shuffle.drawn);  // drawn by finalize, at the start of the run
    EXPECT_EQ(r.init_seed(), 4u);
    EXPECT_EQ(r.shuffle_seed(), r.noise.shuffle.seed);
}

TEST(NoiseFlagsCli, EveryFlagReachesTheConfig) {
    const TrainConfig c = parse_train(
        "--noise algo --seed-init fixed:3 --seed-augment off --seed-dropout off --augment crop "
        "--dropout 0.5 --init-perturb conv1.weight:5:down --impl fast "
        "--impl-site conv.wgrad=exact --impl-site loss=permuted:9,bn.stats=kahan "
        "--shuffle-within-batch 12");
    EXPECT_EQ(c.noise.preset, "algo");
    EXPECT_EQ(c.noise.init, SourceSetting::fixed(3));
    EXPECT_FALSE(c.augment_on());  // --augment crop, but the source is off
    EXPECT_FALSE(c.dropout_on());
    EXPECT_EQ(c.noise.init_perturb, (InitPerturb{"conv1.weight", 5, -1}));
    auto mode = [&](ReduceSite s) { return c.noise.sites[static_cast<std::size_t>(s)].mode; };
    EXPECT_EQ(mode(ReduceSite::kConvWgrad), AccumMode::kExact);  // both --impl-site count
    EXPECT_EQ(mode(ReduceSite::kLoss), AccumMode::kPermuted);
    EXPECT_EQ(mode(ReduceSite::kBnStats), AccumMode::kKahan);
    EXPECT_EQ(mode(ReduceSite::kBiasGrad), AccumMode::kAtomic);
    EXPECT_EQ(c.noise.shuffle_within_batch, SourceSetting::fixed(12));
    EXPECT_FALSE(parse_train("--no-shuffle").shuffle_on());

    const nlohmann::ordered_json j = to_json(c);
    EXPECT_EQ(j.at("noise"), "algo");
    EXPECT_EQ(j.at("seed"), nullptr);  // not given
    EXPECT_EQ(j.at("seed-init").get<uint64_t>(), 3u);
    EXPECT_EQ(j.at("seed-augment"), "off");
    EXPECT_EQ(j.at("init-perturb"), "conv1.weight:5:down");
    EXPECT_EQ(j.at("impl"), "fast");
    EXPECT_EQ(j.at("impl-site").size(), 2u);
    EXPECT_EQ(j.at("shuffle-within-batch").get<uint64_t>(), 12u);
    EXPECT_EQ(to_json(parse_train("--seed random")).at("seed"), "random");
}

TEST(NoiseFlagsCli, BadValuesNameFlagAndValue) {
    struct Bad {
        const char* args;
        std::vector<const char*> expect;
    };
    const Bad cases[] = {
        {"--seed=-3", {"--seed", "-3", "fixed:N"}},
        {"--seed off", {"--seed", "off", "--seed-shuffle off"}},
        {"--seed-init off", {"--seed-init", "off", "cannot be switched off"}},
        {"--seed-shuffle sometimes", {"--seed-shuffle", "sometimes", "random", "off"}},
        {"--noise chaos", {"--noise", "chaos", "algo+impl"}},
        {"--impl quick", {"--impl", "quick", "deterministic"}},
        {"--impl-site conv.wgard=atomic", {"--impl-site", "conv.wgard", "conv.wgrad"}},
        {"--impl-site loss=fastest", {"--impl-site", "fastest", "kahan"}},
        {"--init-perturb conv1.weight", {"--init-perturb", "NAME:INDEX"}},
        {"--shuffle-within-batch x", {"--shuffle-within-batch", "'x'"}},
        {"--no-shuffle --seed-shuffle 2", {"--no-shuffle", "--seed-shuffle 2"}},
    };
    for (const Bad& b : cases) {
        SCOPED_TRACE(b.args);
        const std::string msg = parse_train_error(b.args);
        ASSERT_FALSE(msg.empty()) << "accepted";
        for (const char* part : b.expect) EXPECT_NE(msg.find(part), std::string::npos) << msg;
        // CLI11 prefixes the flag itself: never "--seed: --seed: ...".
        const std::string flag =
            std::string(b.args).substr(0, std::string(b.args).find_first_of(" ="));
        EXPECT_EQ(msg.find(flag + ": " + flag), std::string::npos) << msg;
    }
}

TEST(NoiseFlagsCli, ConfigJsonRoundTrip) {
    const TrainConfig c = parse_train(
        "--model smallcnn-bn --epochs 3 --lr 0.01 --optimizer sgd --nesterov --augment flip "
        "--limit-train 100 --threads 1 --out /tmp/x --data-dir /tmp/d --seed 7");
    const TrainConfig back = train_config_from_json(nlohmann::json::parse(to_json(c).dump()));
    const nlohmann::ordered_json a = to_json(c), b = to_json(back);
    for (const auto& [key, value] : a.items()) {
        // Noise settings travel in the "noise" block, not here.
        if (key.rfind("seed-", 0) == 0 || key == "shuffle" || key == "noise" ||
            key == "init-perturb" || key == "impl" || key == "shuffle-within-batch") {
            continue;
        }
        EXPECT_EQ(b.at(key), value) << key;
    }
    nlohmann::json broken = nlohmann::json::parse(to_json(c).dump());
    broken.erase("lr");
    try {
        train_config_from_json(broken);
        ADD_FAILURE() << "accepted";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("\"lr\""), std::string::npos) << e.what();
    }
}

TEST(Replay, TakesTheRecordAndOnlyHarmlessFlags) {
    TrainConfig rec =
        parse_train("--seed random --epochs 2 --out runs/a --impl-site loss=permuted:4");
    nlohmann::json record;
    record["config"] = nlohmann::json::parse(to_json(rec).dump());
    record["noise"] = nlohmann::json::parse(to_json(rec.noise).dump());
    record["weights_sha256"] = "abc";

    TrainConfig given = parse_train("--threads 1 --progress none");
    TrainConfig c =
        replay_config("runs/a/result.json", record, given, {"--replay", "--threads", "--progress"});
    EXPECT_EQ(c.noise, rec.noise);  // random seeds as drawn
    EXPECT_TRUE(c.noise_from_record);
    EXPECT_EQ(c.epochs, 2);
    EXPECT_EQ(c.threads, 1);
    EXPECT_EQ(c.progress, "none");
    EXPECT_EQ(c.out, "runs/a-replay");
    EXPECT_EQ(c.replay_of_sha256, "abc");
    finalize_train_config(c);
    EXPECT_EQ(c.noise, rec.noise);  // finalize draws nothing new

    try {
        replay_config("runs/a/result.json", record, given, {"--replay", "--lr"});
        ADD_FAILURE() << "--lr accepted with --replay";
    } catch (const ValueError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("--lr"), std::string::npos) << msg;
        EXPECT_NE(msg.find("--out"), std::string::npos) << msg;  // what is allowed
    }
    nlohmann::json no_noise = record;
    no_noise.erase("noise");
    EXPECT_THROW(replay_config("r.json", no_noise, given, {"--replay"}), ValueError);
}

// A NaN gradient stops the step with a message naming the step, the op and the parameter.
TEST(NonFinite, BackwardCheckedNamesStepOpAndParameter) {
    std::unique_ptr<Model> model = make_model(ModelConfig{});
    const NamedParam& p = model->params().at(0);
    Tensor w = p.tensor;  // a handle to the parameter
    w.set_grad(Tensor());
    auto nan_loss = [&] {
        Tensor out = Tensor::from_vector({1}, {0.0f});
        autograd::record(out, "nan_maker", {p.tensor}, [&](const Tensor&) {
            Tensor g = Tensor::zeros(p.tensor.shape());
            g.f32()[3] = std::numeric_limits<float>::infinity();
            return std::vector<Tensor>{g};
        });
        return out;
    };
    for (bool tape_check : {true, false}) {
        SCOPED_TRACE(tape_check);
        autograd::set_check_finite(tape_check);
        try {
            backward_checked(nan_loss(), *model, 0.1, 0, 1, 6);
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            const std::string msg = e.what();
            for (const char* part : {"step 2 of 6", "parameter conv1.weight", "element 3"}) {
                EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
            }
            if (tape_check) {
                EXPECT_NE(msg.find("nan_maker"), std::string::npos) << msg;
            }
        }
        w.set_grad(Tensor());
    }
    autograd::set_check_finite(false);
}

// The scan after the backward covers every parameter at once and names the one that is bad, with
// finite gradients before it.
TEST(NonFinite, TheGradientScanNamesALaterParameter) {
    std::unique_ptr<Model> model = make_model(ModelConfig{});
    const std::vector<NamedParam>& params = model->params();
    ASSERT_GE(params.size(), 3u);
    const NamedParam& bad = params.back();
    Tensor out = Tensor::from_vector({1}, {0.0f});
    autograd::record(out, "grads", {params[0].tensor, bad.tensor}, [&](const Tensor&) {
        Tensor g = Tensor::zeros(bad.tensor.shape());
        g.f32()[bad.tensor.numel() - 1] = std::nanf("");
        return std::vector<Tensor>{Tensor::zeros(params[0].tensor.shape()), g};
    });
    try {
        backward_checked(out, *model, 0.1, 1, 0, 6);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const std::string& part :
             {std::string("parameter ") + bad.name,
              "element " + std::to_string(bad.tensor.numel() - 1), std::string("epoch 2")}) {
            EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
        }
    }
    for (const NamedParam& p : params) Tensor(p.tensor).set_grad(Tensor());
}

// --init-perturb on a real model: one element moves by one ulp, the others stay.
TEST(NonFinite, PerturbInitialWeightOnAModel) {
    std::unique_ptr<Model> model = make_model(ModelConfig{});
    model->init(InitScheme::kGlorotUniform, 0);
    const std::vector<float> before = model->params().at(0).tensor.to_vector();
    const std::string note = perturb_initial_weight(*model, {"conv1.weight", 5, -1});
    const std::vector<float> after = model->params().at(0).tensor.to_vector();
    EXPECT_EQ(after[5], std::nextafter(before[5], -INFINITY));
    for (std::size_t i = 0; i < before.size(); ++i) {
        if (i != 5) {
            EXPECT_EQ(after[i], before[i]) << i;
        }
    }
    EXPECT_NE(note.find("conv1.weight[5]"), std::string::npos) << note;
    EXPECT_THROW(perturb_initial_weight(*model, {"conv1.running_mean", 0, 1}), ValueError);
}

}  // namespace
}  // namespace dt
