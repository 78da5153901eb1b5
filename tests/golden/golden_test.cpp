// SPDX-License-Identifier: MIT
// Golden weights: which weights a recipe gives. Every reference model under the presets
// deterministic, exact, exact-all and kahan, and SmallCNN with every optimizer, schedule and
// noise switch, each trained for a few steps on a small synthetic data set (64 images of 28x28,
// 80 CIFAR-shaped images, or 64 windows of a synthetic text for GPT) through the real `detrain`
// executable; each run's weights_sha256 must equal the hash written below. Every other determinism
// test compares runs with each other, so a change of bits that is the same on every thread count
// passes there unseen; here it fails, on whatever x86-64 machine the suite runs (docs/noise.md,
// "What you can rely on").
//
// A change that alters these bits on purpose bumps kRecipeVersion (apps/common/version.h) and this
// file's kGoldenRecipe and hashes in the same commit, with the reason in the commit message.
// A failing case prints the hash the run gave and the command line to reproduce it.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/synthetic_cifar.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/synthetic_text.h"

namespace fs = std::filesystem;

namespace {

/// The recipe version the hashes below belong to.
constexpr int kGoldenRecipe = 1;

struct GoldenCase {
    const char* name;    // test name suffix
    const char* args;    // flags after the common ones (data set, seed, epochs, batch)
    const char* sha256;  // the expected weights_sha256
};

/// How gtest (and so ctest's test list) prints a case: its flags, not its bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.args; }

// Common flags: --seed 11 --epochs 1 --batch-size 16 (4 steps on 64 images) unless a case adds
// its own; "cifar" cases run on the CIFAR-10-shaped set (80 images, 5 steps).
const GoldenCase kCases[] = {
    // ---- every model x the presets ----
    {"smallcnn_deterministic", "--model smallcnn --impl deterministic",
     "b21091ba4d88253e6489aaaabf2f9a1b1615cacaeebc286b8ffa375241c77f94"},
    {"smallcnn_exact", "--model smallcnn --impl exact",
     "a6ff7ea4973637063cf8049753a845583bec2c3c02e52837b2051c7eaeccbf2c"},
    {"smallcnn_exact_all", "--model smallcnn --impl exact-all",
     "17340092855df6f6422d3ef7e29c95233c400528627bab66f30eb49fa81ea4ce"},
    {"smallcnn_kahan", "--model smallcnn --impl kahan",
     "17340092855df6f6422d3ef7e29c95233c400528627bab66f30eb49fa81ea4ce"},
    {"smallcnn_bn_deterministic", "--model smallcnn-bn --impl deterministic",
     "e01da65ff999420520c9ea00dda71de8e8251412bda31a3f5ac1669709ae6d6a"},
    {"smallcnn_bn_exact", "--model smallcnn-bn --impl exact",
     "bc81136accfcd8afdb4f17318bfa5e2009016d1110963684deecb695d81e5981"},
    {"smallcnn_bn_exact_all", "--model smallcnn-bn --impl exact-all",
     "ec2709273e84cb301d3d786ecf65e9583beaa325d70e55dc5b9ce7d8caec36c4"},
    {"smallcnn_bn_kahan", "--model smallcnn-bn --impl kahan",
     "ec2709273e84cb301d3d786ecf65e9583beaa325d70e55dc5b9ce7d8caec36c4"},
    {"mediumcnn_k1_deterministic", "--model mediumcnn --kernel-size 1 --impl deterministic",
     "13878f7eb8a0c759e257948142f0eff73b15ae5153daf00f02dc8b2288edfc08"},
    {"mediumcnn_k1_exact", "--model mediumcnn --kernel-size 1 --impl exact",
     "5b32fc2a89272a05ac7056f48b037217b2b32629e9e53e82b6daf8327b132214"},
    {"mediumcnn_k1_exact_all", "--model mediumcnn --kernel-size 1 --impl exact-all",
     "f0990482b753f8f060f348b5e0439a01d33a56223b1e5255362fa16b62f4eb6d"},
    {"mediumcnn_k1_kahan", "--model mediumcnn --kernel-size 1 --impl kahan",
     "f0990482b753f8f060f348b5e0439a01d33a56223b1e5255362fa16b62f4eb6d"},
    {"mediumcnn_k3_deterministic", "--model mediumcnn --kernel-size 3 --impl deterministic",
     "dad8eaca9c6d9d35912335bd9e5732f243ebc065870609ac5d4c6f5e8d3ae160"},
    {"mediumcnn_k3_exact", "--model mediumcnn --kernel-size 3 --impl exact",
     "9e16153af763c0a370d0c88a43514ce411d56fea050ea006702323c9ea569efe"},
    {"mediumcnn_k3_exact_all", "--model mediumcnn --kernel-size 3 --impl exact-all",
     "12e2b067f3f3cbb9221defb332d4fc84fbf875e9b72c5daa522c6106ab3a74e0"},
    {"mediumcnn_k3_kahan", "--model mediumcnn --kernel-size 3 --impl kahan",
     "12e2b067f3f3cbb9221defb332d4fc84fbf875e9b72c5daa522c6106ab3a74e0"},
    {"mediumcnn_k5_deterministic", "--model mediumcnn --kernel-size 5 --impl deterministic",
     "41c3b31836a02c244e30da42f81e6f5ae38ff5eaecb73f181805ece9da5c8103"},
    {"mediumcnn_k5_exact", "--model mediumcnn --kernel-size 5 --impl exact",
     "8440788d4a5bc28ae7acde0e1ac535c8ec0a7d28a095c0980baa4bcb69292361"},
    {"mediumcnn_k5_exact_all", "--model mediumcnn --kernel-size 5 --impl exact-all",
     "45afd068fb17f5292aa07fa2f1288fffa2013b14eb09f3c9efde99b04529d5f6"},
    {"mediumcnn_k5_kahan", "--model mediumcnn --kernel-size 5 --impl kahan",
     "45afd068fb17f5292aa07fa2f1288fffa2013b14eb09f3c9efde99b04529d5f6"},
    {"mediumcnn_k7_deterministic", "--model mediumcnn --kernel-size 7 --impl deterministic",
     "0408d672e3ebdb003f8f3cf1dede62b2a115eb7d6c64678940126d345009eed2"},
    {"mediumcnn_k7_exact", "--model mediumcnn --kernel-size 7 --impl exact",
     "8c3672e19185fd297471b850922971224fdc8329018484a2d813e44bb53b8147"},
    {"mediumcnn_k7_exact_all", "--model mediumcnn --kernel-size 7 --impl exact-all",
     "09845777570d9623e1a27da5cde9dd41e768d858c0947812c64b4b0ee923ca60"},
    {"mediumcnn_k7_kahan", "--model mediumcnn --kernel-size 7 --impl kahan",
     "09845777570d9623e1a27da5cde9dd41e768d858c0947812c64b4b0ee923ca60"},
    {"resnet18_deterministic", "--model resnet18 --impl deterministic",
     "6593e3b6782b665d5b84ab3706ea17000da3ebcf990a582a6aec690a1a0b98cc"},
    {"resnet18_exact", "--model resnet18 --impl exact",
     "96fde30a256f5ef612445636cc7bc2b5aec0a5dbc7dab2d35dd76a0b0d4314c6"},
    {"resnet18_exact_all", "--model resnet18 --impl exact-all",
     "ba74ca1f8fe356c8c5ccac6883dd783d6aa69154905c5a52f37a875f0f74177f"},
    {"resnet18_kahan", "--model resnet18 --impl kahan",
     "ba74ca1f8fe356c8c5ccac6883dd783d6aa69154905c5a52f37a875f0f74177f"},
    // ---- optimizers and schedules (SmallCNN) ----
    {"sgd", "--optimizer sgd --lr 0.05 --momentum 0",
     "8a82950e18b92d5fad98092939e7b0dd80451a68aa6b90fd50d24b60ccf51d33"},
    {"sgd_momentum", "--optimizer sgd --lr 0.05 --momentum 0.9",
     "c068a578c0b20754fa1f24ed4f5302643e7381fd3e2333da95158bc363eb0fb0"},
    {"sgd_nesterov_decay", "--optimizer sgd --lr 0.05 --nesterov --weight-decay 1e-3",
     "18ed82b20feb8dae11c5f1fcd1a6fafc0650256d6ecc36f7e5d225d578ea2842"},
    {"adam_decay", "--optimizer adam --weight-decay 1e-3",
     "b91613a9eac2744aa1f8bcfd635b9cebab3895af4266d7b496afc624ca5211d7"},
    {"adamw", "--optimizer adamw --lr 1e-3 --weight-decay 0.05",
     "7120d6c2b02105a14d3ee045a3c25b13a2afe9a7c3481ad2ccccd06278e17aea"},
    {"cosine_warmup", "--epochs 2 --schedule cosine --warmup-epochs 0.5 --min-lr 1e-5",
     "e70026387a53317e9f5041a4d2422d1d77ce2d1b7ff40982e9978ec2566ba85a"},
    {"step_schedule", "--epochs 2 --schedule step --step-epochs 1 --gamma 0.5",
     "d8b19d14ddfa9183232f8c7d005a4e9a3e8f9f8071f615d12db8882e2e7aa3dd"},
    // ---- algorithmic noise switches and data options (SmallCNN) ----
    {"dropout", "--epochs 2 --dropout 0.3",
     "255e9c5a58d90c00b1e45a3cfdd7f7312acb0baa4aec478f7916fd2633f4bd51"},
    {"augment", "--epochs 2 --augment crop+flip --crop-padding 3",
     "a70fc65ace043f81a8b983720bb9163c34fdcee8145b78c7863d64389efedb78"},
    {"he_standardized", "--init he --normalize standard",
     "9e7582251960cdc7d97f3b8b35e2687fa21f17a58b0bf58e6038c23920086495"},
    {"no_shuffle", "--seed-shuffle off",
     "30b636fb1ef2bb7789687d92dd1eb3e7faed55d8bedc4408d43beb6756013428"},
    {"separate_seeds",
     "--seed-init 3 --seed-shuffle 4 --seed-augment 5 --seed-dropout 6 "
     "--dropout 0.2 --augment flip",
     "0f5f08d7c62d259ff3093a1ac76c982821271cdfd3be7e45a655aa3553d9fa8a"},
    {"init_perturb", "--init-perturb conv1.weight:0:up",
     "a8b46cafd5a48ac9a6a2f91c515031dd80a68d1e0491c8e9a65a5b721a2494bf"},
    {"shuffle_within_batch", "--shuffle-within-batch 3",
     "6aefd5857f31f8f4ef41d23b9cd6eb88d4bba76aea5d3610089cc10605742660"},
    {"limit_imbalance", "--limit-train 56 --imbalance 3:0.5",
     "3f596e8d7a2bbc7dd039e512c0436c70ad563cdbcb0f3675429d43ce8b08adff"},
    {"batch_remainder", "--batch-size 24",
     "12c82f9b38ee1b5d0496aa262af5fe7e0fdddc6066689f5ca8d50cb06e30a69e"},
    // ---- implementation noise that replays (SmallCNN-BN: every site is used) ----
    {"permuted", "--model smallcnn-bn --impl permuted:7",
     "0ff8766f422b828fca8a6f6b7a255d00ed2d835ff775c1594638fb389d703668"},
    {"mixed_sites",
     "--model smallcnn-bn --impl-site conv.wgrad=exact,bn.stats=kahan,"
     "loss=permuted:2,pool.backward=exact",
     "bc60c2b1ad6dd57e07365a0b5930af7f33aa488ee202dc04d7b1f7c85c3d2f5b"},
    // ---- GPT on a synthetic text (tests/support/synthetic_text.h): the presets ----
    {"gpt_deterministic", "text --impl deterministic",
     "215230680c246dfdc0d9d8f73c10f0155020c1d3243ec03bd4b1ea99785c21ba"},
    {"gpt_exact", "text --impl exact",
     "2095ff1957a577e4047f1f62cec798bd87fb5c66631fc460f2c4e66c8e6a1448"},
    {"gpt_exact_all", "text --impl exact-all",
     "df0607753bb8fb2f17ca0e5b4b95233d9af87fc623e07a77b0181f226b5f45b0"},
    {"gpt_kahan", "text --impl kahan",
     "df0607753bb8fb2f17ca0e5b4b95233d9af87fc623e07a77b0181f226b5f45b0"},
    // ---- CIFAR-shaped data: three channels, 32x32 ----
    {"cifar_smallcnn_bn", "cifar --model smallcnn-bn --normalize standard --augment crop+flip",
     "5e96c15e901b178484fad0430a1f672cdb5c0732a5d38ab282b9fb5735fb38a9"},
    {"cifar_resnet18",
     "cifar --model resnet18 --normalize standard --augment crop+flip "
     "--dropout 0.2 --optimizer sgd --lr 0.02 --momentum 0.9",
     "9ca16e4735227858cc488c48ece6193f412353b935b4943b1c5cf6d1bc5f549b"},
};

// The GPT cases' model and recipe ("text" cases; their data flag is --data-file).
constexpr const char* kGptFlags =
    "--model gpt --layers 2 --heads 2 --width 32 --context 32 --limit-train 64 --limit-test 8 "
    "--eval-batch-size 8 --optimizer adamw --lr 1e-3 --weight-decay 0.01 --schedule cosine "
    "--warmup-epochs 0.5 --min-lr 1e-4";

class Golden : public ::testing::TestWithParam<GoldenCase> {
 protected:
    static void SetUpTestSuite() {
        root_ = dt::test::make_synthetic_root("detrain-golden", 64, 32);
        dt::test::write_synthetic_cifar10(root_ / "cifar", 16, 32);
        dt::test::write_synthetic_text((root_ / "text.txt").string(), 12000, 4);
    }
    static void TearDownTestSuite() { dt::test::remove_synthetic_root(root_); }
    static inline fs::path root_;
};

TEST_P(Golden, WeightsMatchTheRecipe) {
    const GoldenCase& c = GetParam();
    std::string args = c.args;
    std::string data = "--data-dir " + (root_ / "data").string();
    if (args.rfind("cifar ", 0) == 0) {
        args = args.substr(6);
        data = "--dataset cifar10 --data-dir " + (root_ / "cifar").string();
    }
    if (args.rfind("text ", 0) == 0) {  // 64 windows of 32 bytes, a 2-block GPT
        args = kGptFlags + args.substr(4);
        data = "--data-file " + (root_ / "text.txt").string();
    }
    const fs::path out = root_ / c.name;
    // Later flags win, so a case's own --epochs / --batch-size override the common ones.
    const std::string cmd = "train " + data + " --out " + out.string() +
                            " --progress none --seed 11 --epochs 1 --batch-size 16 " + args;
    const dt::test::CliRun r = dt::test::run_cli(DT_DETRAIN_EXE, cmd, root_, c.name);
    ASSERT_EQ(r.status, 0) << "detrain " << cmd << "\n" << r.err;
    const nlohmann::json result = nlohmann::json::parse(dt::test::slurp(out / "result.json"));
    ASSERT_EQ(result.at("recipe").get<int>(), kGoldenRecipe)
        << "the recipe version changed: update kGoldenRecipe and every hash of this file in the "
           "commit that bumped it";
    EXPECT_EQ(result.at("weights_sha256").get<std::string>(), c.sha256)
        << "golden case " << c.name << " gave other weights than recipe " << kGoldenRecipe
        << " promises.\n  reproduce: detrain " << cmd
        << "\n  If the change of bits is on purpose, bump kRecipeVersion (apps/common/version.h) "
           "and the hashes here, and say why in the commit message.";
}

INSTANTIATE_TEST_SUITE_P(Recipe, Golden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& i) {
                             return std::string(i.param.name);
                         });

}  // namespace
