// SPDX-License-Identifier: MIT
// Model weights <-> safetensors: every NamedParam (including BN running statistics) saved under
// its name in canonical order, loaded back bit for bit; mismatching files are rejected with the
// parameter named and nothing copied.
#include "models/model_io.h"

#include <gtest/gtest.h>

#include <string>

#include "models/model.h"
#include "models/weights_hash.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/models.h"
#include "tests/support/temp_dir.h"

namespace dt {
namespace {

using test::model_config;

class ModelIoTest : public ::testing::Test {
 protected:
    std::string path(const std::string& name) const { return dir_ / name; }
    test::TempDir dir_;  // a fresh folder per test
};

TEST_F(ModelIoTest, RoundTripIncludesRunningStats) {
    auto a = make_model(model_config("smallcnn-bn", 1, 28, 28));
    a->init(InitScheme::kGlorotUniform, 1);
    Tensor running_var = a->params()[4].tensor;
    ASSERT_EQ(a->params()[4].name, "bn1.running_var");
    running_var.f32()[2] = 0.25f;  // as if trained
    const std::string p = path("w.safetensors");
    save_model_safetensors(*a, p, {{"model", "smallcnn-bn"}});

    const io::SafetensorsFile f = io::load_safetensors(p);
    ASSERT_EQ(f.tensors.size(), a->params().size());
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
        EXPECT_EQ(f.tensors[i].first, a->params()[i].name);  // canonical order in the file
    }

    auto b = make_model(model_config("smallcnn-bn", 1, 28, 28));
    b->init(InitScheme::kGlorotUniform, 2);
    const io::Metadata meta = load_model_safetensors(*b, p);
    EXPECT_EQ(meta.at("model"), "smallcnn-bn");
    EXPECT_EQ(weights_sha256(*a), weights_sha256(*b));
    for (std::size_t i = 0; i < a->params().size(); ++i) {
        EXPECT_TRUE(test::bitwise_equal(a->params()[i].tensor.to_vector(),
                                        b->params()[i].tensor.to_vector()))
            << a->params()[i].name;
    }
}

TEST_F(ModelIoTest, MismatchesNameTheParameterAndCopyNothing) {
    auto small = make_model(model_config("smallcnn", 1, 28, 28));
    small->init(InitScheme::kGlorotUniform, 1);
    const std::string p = path("small.safetensors");
    save_model_safetensors(*small, p);

    auto bn = make_model(model_config("smallcnn-bn", 1, 28, 28));
    bn->init(InitScheme::kGlorotUniform, 3);
    const std::string before = weights_sha256(*bn);
    std::string msg = test::message_of<IoError>([&] { load_model_safetensors(*bn, p); });
    EXPECT_NE(msg.find("'bn1.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
    EXPECT_NE(msg.find(p), std::string::npos) << msg;

    auto rgb = make_model(model_config("smallcnn", 3, 32, 32));
    rgb->init(InitScheme::kGlorotUniform, 3);
    const std::string rgb_before = weights_sha256(*rgb);
    msg = test::message_of<ShapeError>([&] { load_model_safetensors(*rgb, p); });
    EXPECT_NE(msg.find("'conv1.weight' has shape [16, 1, 3, 3], expected [16, 3, 3, 3]"),
              std::string::npos)
        << msg;
    EXPECT_EQ(weights_sha256(*rgb), rgb_before);  // conv2 etc. match but nothing was copied

    io::NamedTensors extra = model_named_tensors(*small);
    extra.emplace_back("fc3.weight", Tensor::zeros({2, 2}));
    io::save_safetensors(path("extra.safetensors"), extra);
    auto fresh = make_model(model_config("smallcnn", 1, 28, 28));
    msg = test::message_of<IoError>(
        [&] { load_model_safetensors(*fresh, path("extra.safetensors")); });
    EXPECT_NE(msg.find("unexpected tensor 'fc3.weight'"), std::string::npos) << msg;

    io::NamedTensors wrong_dtype = model_named_tensors(*small);
    wrong_dtype[1].second = Tensor::from_vector_i64({16}, std::vector<int64_t>(16, 0));
    io::save_safetensors(path("dtype.safetensors"), wrong_dtype);
    msg = test::message_of<IoError>(
        [&] { load_model_safetensors(*fresh, path("dtype.safetensors")); });
    EXPECT_NE(msg.find("'conv1.bias' must be float32"), std::string::npos) << msg;
    EXPECT_EQ(weights_sha256(*bn), before);
}

}  // namespace
}  // namespace dt
