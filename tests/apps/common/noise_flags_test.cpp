// SPDX-License-Identifier: MIT
// The noise switchboard's configuration layer (engine/noise/): parsing of every switch, errors
// naming flag / value / valid values, presets and precedence, random draws recorded once, the
// JSON round trip and the tape's finite check (registry: reduce_sites_test).
#include "apps/common/noise_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

using test::message_of;

constexpr std::size_t kSite(ReduceSite s) { return static_cast<std::size_t>(s); }

void expect_mentions(const std::string& msg, std::initializer_list<const char*> parts) {
    ASSERT_FALSE(msg.empty()) << "no ValueError";
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " in: " << msg;
}

TEST(NoiseSource, ParsesEveryForm) {
    EXPECT_EQ(parse_source_setting("--seed", "7"), SourceSetting::fixed(7));
    EXPECT_EQ(parse_source_setting("--seed", "fixed:7"), SourceSetting::fixed(7));
    EXPECT_EQ(parse_source_setting("--seed", "random"), SourceSetting::random());
    EXPECT_EQ(parse_source_setting("--seed", "off"), SourceSetting::off());
    EXPECT_EQ(parse_source_setting("--seed", "18446744073709551615").seed,
              std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(source_setting_text(SourceSetting::fixed(3)), "fixed:3");
    EXPECT_EQ(source_setting_text(SourceSetting::random()), "random");
    EXPECT_EQ(source_setting_text({SourceKind::kRandom, 9, true}), "random:9");
    EXPECT_EQ(source_setting_text(SourceSetting::off()), "off");
}

TEST(NoiseSource, BadValuesNameFlagValueAndForms) {
    for (const char* bad :
         {"-3", "fixed:", "fixed:x", "18446744073709551616", "rand", "", "1e3", "fixed:-1", " 5"}) {
        SCOPED_TRACE(bad);
        expect_mentions(
            message_of<ValueError>([&] { parse_source_setting("--seed-shuffle", bad); }),
            {"--seed-shuffle", "expected", "fixed:N", "random", "off"});
    }
    // The weight init cannot be off: the message says why and what to do instead.
    expect_mentions(
        message_of<ValueError>([] { parse_source_setting("--seed-init", "off", false); }),
        {"--seed-init", "'off'", "cannot be switched off", "fixed"});
}

TEST(InitPerturb, ParsesAndApplies) {
    EXPECT_EQ(parse_init_perturb("conv1.weight:0:up"), (InitPerturb{"conv1.weight", 0, +1}));
    EXPECT_EQ(parse_init_perturb("fc2.bias:9"), (InitPerturb{"fc2.bias", 9, +1}));
    EXPECT_EQ(parse_init_perturb("layer1.0.conv1.weight:12:down").direction, -1);
    EXPECT_EQ(init_perturb_text({"a.b", 4, -1}), "a.b:4:down");
    for (const char* bad : {"conv1.weight", ":0", "conv1.weight:x", "conv1.weight:-1",
                            "conv1.weight:0:sideways", "a:1:up:2"}) {
        SCOPED_TRACE(bad);
        expect_mentions(message_of<ValueError>([&] { parse_init_perturb(bad); }),
                        {"--init-perturb", bad, "NAME:INDEX"});
    }

    const std::vector<std::string> names = {"w", "b"};
    const std::vector<Tensor> ts = {Tensor::from_vector({2, 2}, {0.5f, -0.25f, 1.0f, 2.0f}),
                                    Tensor::zeros({3})};
    auto [before, after] = apply_init_perturb({"w", 1, +1}, names, ts);
    EXPECT_EQ(before, -0.25f);
    EXPECT_EQ(after, std::nextafter(-0.25f, 1.0f));
    EXPECT_EQ(ts[0].to_vector()[1], after);  // in place, one ulp
    EXPECT_EQ(ts[0].to_vector()[0], 0.5f);
    apply_init_perturb({"w", 3, -1}, names, ts);
    EXPECT_EQ(ts[0].to_vector()[3], std::nextafter(2.0f, -INFINITY));
    apply_init_perturb({"b", 0, +1}, names, ts);  // from 0: the smallest subnormal
    EXPECT_EQ(ts[1].to_vector()[0], std::numeric_limits<float>::denorm_min());

    expect_mentions(message_of<ValueError>([&] {
                        apply_init_perturb({"conv9.weight", 0, 1}, names, ts);
                    }),
                    {"conv9.weight", "w, b"});
    expect_mentions(message_of<ValueError>([&] {
                        apply_init_perturb({"w", 4, 1}, names, ts);
                    }),
                    {"index 4", "4 elements", "[0, 4)"});
}

TEST(ImplSites, ParseModes) {
    EXPECT_EQ(parse_site_setting("--impl", "tree").mode, AccumMode::kTree);
    EXPECT_EQ(parse_site_setting("--impl", "atomic").mode, AccumMode::kAtomic);
    EXPECT_EQ(parse_site_setting("--impl", "kahan").mode, AccumMode::kKahan);
    EXPECT_EQ(parse_site_setting("--impl", "exact").mode, AccumMode::kExact);
    const SiteSetting p = parse_site_setting("--impl", "permuted:7");
    EXPECT_EQ(p.mode, AccumMode::kPermuted);
    EXPECT_EQ(p.permute, SourceSetting::fixed(7));
    EXPECT_EQ(site_setting_text(p), "permuted:7");
    EXPECT_EQ(parse_site_setting("--impl", "permuted:random").permute, SourceSetting::random());
    for (const char* bad :
         {"permuted", "permuted:", "permuted:off", "permuted:x", "Tree", "fast", "fma"}) {
        SCOPED_TRACE(bad);
        expect_mentions(
            message_of<ValueError>([&] { parse_site_setting("--impl-site loss", bad); }),
            {"--impl-site loss", bad, "permuted:"});
    }
}

TEST(ImplSites, Presets) {
    for (const SiteSetting& s : impl_sites("deterministic")) EXPECT_EQ(s.mode, AccumMode::kTree);
    for (const SiteSetting& s : impl_sites("exact-all")) EXPECT_EQ(s.mode, AccumMode::kExact);
    const SiteSettings exact = impl_sites("exact");
    for (ReduceSite site : all_reduce_sites()) {  // exact where sample order matters, else tree
        EXPECT_EQ(exact[kSite(site)].mode,
                  reduce_site_crosses_samples(site) ? AccumMode::kExact : AccumMode::kTree);
    }
    for (const SiteSetting& s : impl_sites("kahan")) EXPECT_EQ(s.mode, AccumMode::kKahan);
    for (const SiteSetting& s : impl_sites("permuted:3")) {
        EXPECT_EQ(s.mode, AccumMode::kPermuted);
        EXPECT_EQ(s.permute.seed, 3u);
    }
    const SiteSettings fast = impl_sites("fast");
    for (ReduceSite site : all_reduce_sites()) {
        SCOPED_TRACE(reduce_site_name(site));
        const bool atomic = reduce_site_atomic_in_fast(site);
        EXPECT_EQ(fast[kSite(site)].mode, atomic ? AccumMode::kAtomic : AccumMode::kTree);
        // Atomic exactly at the cross-sample sites (few outputs, long sums).
        EXPECT_EQ(atomic, reduce_site_crosses_samples(site));
    }
    expect_mentions(
        message_of<ValueError>([] { impl_sites("quick"); }),
        {"--impl", "'quick'", "fast", "deterministic", "exact", "exact-all", "permuted:<seed>"});
}

TEST(ImplSites, TheEngineKnowsThePresetsByName) {
    for (const std::string& name : impl_preset_names()) {
        ASSERT_TRUE(impl_preset(name).has_value()) << name;
        EXPECT_EQ(*impl_preset(name), impl_sites(name)) << name;
    }
    EXPECT_FALSE(impl_preset("kahan").has_value());  // a mode, not a preset: the flag's business
    for (const std::string& name : noise_preset_names()) {
        const std::optional<NoisePreset> p = noise_preset(name);
        ASSERT_TRUE(p.has_value()) << name;
        EXPECT_EQ(p->seeds.kind,
                  name.rfind("algo", 0) == 0 ? SourceKind::kRandom : SourceKind::kFixed);
        EXPECT_STREQ(p->impl, name.find("impl") != std::string::npos ? "fast" : "deterministic");
    }
    EXPECT_FALSE(noise_preset("quiet").has_value());
}

TEST(ImplSites, OverridesAndErrors) {
    SiteSettings s = impl_sites("fast");
    apply_impl_sites(s, "conv.wgrad=tree,bn.stats=exact,loss=permuted:7");
    apply_impl_sites(s, "bn.stats=kahan");  // a later list wins for its sites
    EXPECT_EQ(s[kSite(ReduceSite::kConvWgrad)].mode, AccumMode::kTree);
    EXPECT_EQ(s[kSite(ReduceSite::kBnStats)].mode, AccumMode::kKahan);
    EXPECT_EQ(s[kSite(ReduceSite::kLoss)].permute.seed, 7u);
    EXPECT_EQ(s[kSite(ReduceSite::kBiasGrad)].mode, AccumMode::kAtomic);  // untouched
    expect_mentions(message_of<ValueError>([&] { apply_impl_sites(s, "conv.wgard=atomic"); }),
                    {"--impl-site", "conv.wgard", "conv.wgrad", "pool.backward", "loss"});
    expect_mentions(message_of<ValueError>([&] { apply_impl_sites(s, "loss=fastest"); }),
                    {"--impl-site loss", "fastest", "tree", "atomic", "kahan", "exact"});
    expect_mentions(message_of<ValueError>([&] { apply_impl_sites(s, "loss"); }),
                    {"--impl-site", "SITE=MODE"});
    expect_mentions(message_of<ValueError>([&] { apply_impl_sites(s, "loss=tree,"); }),
                    {"--impl-site"});
}

NoiseConfig from(NoiseFlags f) { return noise_config_from_flags(f); }

TEST(NoiseFlags, DefaultIsControl) {
    const NoiseConfig c = from({});
    EXPECT_EQ(c.preset, "");
    EXPECT_EQ(c.impl, "deterministic");
    for (const SourceSetting* s : {&c.init, &c.shuffle, &c.augment, &c.dropout}) {
        EXPECT_EQ(*s, SourceSetting::fixed(0));
    }
    EXPECT_TRUE(c.shuffle_within_batch.is_off());
    EXPECT_FALSE(c.init_perturb.has_value());
    for (const SiteSetting& s : c.sites) EXPECT_EQ(s.mode, AccumMode::kTree);
    NoiseFlags control;
    control.noise = "control";
    NoiseConfig k = from(control);
    k.preset = "";
    EXPECT_EQ(k, c);  // control = the defaults
}

TEST(NoiseFlags, PresetsAreTheFourVariants) {
    struct Case {
        const char* name;
        SourceKind seeds;
        AccumMode conv_wgrad;
    };
    for (const Case& k : {Case{"control", SourceKind::kFixed, AccumMode::kTree},
                          Case{"algo", SourceKind::kRandom, AccumMode::kTree},
                          Case{"impl", SourceKind::kFixed, AccumMode::kAtomic},
                          Case{"algo+impl", SourceKind::kRandom, AccumMode::kAtomic}}) {
        SCOPED_TRACE(k.name);
        NoiseFlags f;
        f.noise = k.name;
        const NoiseConfig c = from(f);
        EXPECT_EQ(c.preset, k.name);
        for (const SourceSetting* s : {&c.init, &c.shuffle, &c.augment, &c.dropout}) {
            EXPECT_EQ(s->kind, k.seeds);
        }
        EXPECT_EQ(c.sites[kSite(ReduceSite::kConvWgrad)].mode, k.conv_wgrad);
        EXPECT_EQ(c.sites[kSite(ReduceSite::kLoss)].mode, k.conv_wgrad);
    }
    NoiseFlags bad;
    bad.noise = "chaos";
    expect_mentions(message_of<ValueError>([&] { from(bad); }),
                    {"--noise", "chaos", "control", "algo+impl"});
}

TEST(NoiseFlags, PrecedenceBySpecificityNotPosition) {
    NoiseFlags f;
    f.noise = "algo+impl";
    f.seed = "5";               // beats the preset's random seeds
    f.seed_dropout = "random";  // beats --seed
    f.seed_augment = "off";
    f.impl_site = {"conv.wgrad=exact", "loss=tree,conv.wgrad=kahan"};  // beat the preset's fast
    const NoiseConfig c = from(f);
    EXPECT_EQ(c.init, SourceSetting::fixed(5));
    EXPECT_EQ(c.shuffle, SourceSetting::fixed(5));
    EXPECT_TRUE(c.augment.is_off());
    EXPECT_EQ(c.dropout, SourceSetting::random());
    EXPECT_EQ(c.impl, "fast");
    EXPECT_EQ(c.sites[kSite(ReduceSite::kConvWgrad)].mode, AccumMode::kKahan);  // last list wins
    EXPECT_EQ(c.sites[kSite(ReduceSite::kLoss)].mode, AccumMode::kTree);
    EXPECT_EQ(c.sites[kSite(ReduceSite::kBiasGrad)].mode, AccumMode::kAtomic);

    NoiseFlags g;
    g.noise = "impl";
    g.impl = "deterministic";  // --impl beats the preset's implementation
    for (const SiteSetting& s : from(g).sites) EXPECT_EQ(s.mode, AccumMode::kTree);
    EXPECT_EQ(from(g).init, SourceSetting::fixed(0));
}

TEST(NoiseFlags, SwitchingSourcesOff) {
    NoiseFlags f;
    f.no_shuffle = true;
    EXPECT_TRUE(from(f).shuffle.is_off());
    f.seed_shuffle = "off";  // the same thing twice is fine
    EXPECT_TRUE(from(f).shuffle.is_off());
    f.seed_shuffle = "3";
    expect_mentions(message_of<ValueError>([&] { from(f); }), {"--no-shuffle", "--seed-shuffle 3"});

    NoiseFlags s;
    s.seed = "off";  // would switch the init off
    expect_mentions(message_of<ValueError>([&] { from(s); }),
                    {"--seed", "'off'", "--seed-shuffle off"});
    NoiseFlags i;
    i.seed_init = "off";
    expect_mentions(message_of<ValueError>([&] { from(i); }),
                    {"--seed-init", "cannot be switched off"});
    NoiseFlags w;
    w.shuffle_within_batch = "fixed:4";
    w.init_perturb = "fc1.weight:10";
    const NoiseConfig c = from(w);
    EXPECT_EQ(c.shuffle_within_batch, SourceSetting::fixed(4));
    EXPECT_EQ(c.init_perturb, (InitPerturb{"fc1.weight", 10, +1}));
}

TEST(NoiseResolve, RandomSeedsAreDrawnOnceInOrderAndRecorded) {
    NoiseFlags f;
    f.seed = "random";
    f.seed_augment = "11";
    f.impl_site = {"loss=permuted:random,bn.stats=permuted:8"};
    f.shuffle_within_batch = "random";
    NoiseConfig c = from(f);
    EXPECT_FALSE(noise_config_resolved(c));
    uint64_t next = 100;
    resolve_noise_config(c, [&] { return next++; });
    EXPECT_TRUE(noise_config_resolved(c));
    // ORDER: init, shuffle, augment, dropout, permuted sites in site order, in-batch order.
    EXPECT_EQ(c.init, (SourceSetting{SourceKind::kRandom, 100, true}));
    EXPECT_EQ(c.shuffle.seed, 101u);
    EXPECT_EQ(c.augment, SourceSetting::fixed(11));
    EXPECT_EQ(c.dropout.seed, 102u);
    EXPECT_EQ(c.sites[kSite(ReduceSite::kBnStats)].permute, SourceSetting::fixed(8));
    EXPECT_EQ(c.sites[kSite(ReduceSite::kLoss)].permute.seed, 103u);
    EXPECT_EQ(c.shuffle_within_batch.seed, 104u);
    const NoiseConfig once = c;
    resolve_noise_config(c, [&] { return next++; });  // already drawn: nothing changes
    EXPECT_EQ(c, once);

    const ReduceSiteSpecs specs = reduce_site_specs(c);
    EXPECT_EQ(specs[kSite(ReduceSite::kLoss)].mode, AccumMode::kPermuted);
    EXPECT_EQ(specs[kSite(ReduceSite::kLoss)].permute_key, 103u);
    EXPECT_EQ(specs[kSite(ReduceSite::kConvWgrad)].mode, AccumMode::kTree);

    // OS entropy: 64 bits, two draws of random_device; two calls agree with chance 2^-64.
    EXPECT_NE(os_entropy64(), os_entropy64());
    NoiseConfig r = from(f);
    resolve_noise_config(r);
    EXPECT_TRUE(r.init.drawn);
}

TEST(NoiseJson, RoundTripOfTheResolvedConfig) {
    NoiseFlags f;
    f.noise = "algo";
    f.seed_shuffle = "off";
    f.seed_augment = "fixed:18446744073709551615";
    f.init_perturb = "conv2.weight:17:down";
    f.impl = "fast";
    f.impl_site = {"loss=permuted:random,conv.dgrad=permuted:5,bn.stats=exact"};
    f.shuffle_within_batch = "9";
    NoiseConfig c = from(f);
    resolve_noise_config(c, [] { return uint64_t{0xFEDCBA9876543210}; });
    const nlohmann::ordered_json j = to_json(c);
    EXPECT_EQ(j.at("preset"), "algo");
    EXPECT_EQ(j.at("sources").at("init").at("kind"), "random");
    EXPECT_EQ(j.at("sources").at("init").at("seed").get<uint64_t>(), 0xFEDCBA9876543210u);
    EXPECT_EQ(j.at("sources").at("shuffle").at("kind"), "off");
    EXPECT_FALSE(j.at("sources").at("shuffle").contains("seed"));
    EXPECT_EQ(j.at("init_perturb").at("direction"), "down");
    EXPECT_EQ(j.at("sites").at("conv.wgrad").at("mode"), "atomic");
    EXPECT_EQ(j.at("sites").at("loss").at("kind"), "random");
    EXPECT_EQ(j.at("sites").size(), static_cast<std::size_t>(kNumReduceSites));
    // Through text, as a replay reads it: equal, random seeds marked drawn.
    const NoiseConfig back = noise_config_from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(back, c);
    EXPECT_TRUE(noise_config_resolved(back));

    nlohmann::json broken = nlohmann::json::parse(j.dump());
    broken["sites"]["loss"]["mode"] = "fastest";
    expect_mentions(message_of<ValueError>([&] { noise_config_from_json(broken); }),
                    {"sites.loss", "fastest"});
    broken = nlohmann::json::parse(j.dump());
    broken["sources"].erase("dropout");
    expect_mentions(message_of<ValueError>([&] { noise_config_from_json(broken); }), {"dropout"});
    broken = nlohmann::json::parse(j.dump());
    broken["sources"]["init"] = {{"kind", "off"}};
    expect_mentions(message_of<ValueError>([&] { noise_config_from_json(broken); }),
                    {"sources.init", "off"});
}

TEST(NoiseDescribe, BannerNamesEverySwitch) {
    NoiseFlags f;
    f.seed_dropout = "off";
    f.impl_site = {"loss=permuted:7"};
    std::string all;
    for (const std::string& line : describe_noise(from(f))) all += line + "\n";
    for (const char* part : {"init", "shuffle", "augment", "dropout         off", "in-batch",
                             "deterministic", "conv.wgrad=tree", "loss=permuted:7"}) {
        EXPECT_NE(all.find(part), std::string::npos) << part << " in:\n" << all;
    }
}

TEST(FiniteCheck, BackwardNamesTheOpAndTheInput) {
    Tensor w = Tensor::from_vector({2}, {1.0f, 2.0f});
    w.set_requires_grad(true);
    auto nan_op = [&] {
        Tensor out = Tensor::from_vector({1}, {0.0f});
        autograd::record(out, "nan_maker", {w}, [](const Tensor&) {
            return std::vector<Tensor>{Tensor::from_vector({2}, {0.0f, std::nanf("")})};
        });
        return out;
    };
    autograd::backward(nan_op());  // off by default: NaN flows into .grad()
    EXPECT_TRUE(std::isnan(w.grad().to_vector()[1]));
    w.set_grad(Tensor());

    autograd::set_check_finite(true);
    try {
        autograd::backward(nan_op());
        ADD_FAILURE() << "no NonFiniteGradient";
    } catch (const autograd::NonFiniteGradient& e) {
        EXPECT_EQ(e.op, "nan_maker");
        EXPECT_EQ(e.input, 0u);
        EXPECT_EQ(e.element, 1);
        EXPECT_TRUE(e.tensor.same(w));
        expect_mentions(e.what(), {"nan_maker", "element 1", "input 0"});
    }
    autograd::set_check_finite(false);
    EXPECT_EQ(autograd::tape_size(), 0u);
}

}  // namespace
}  // namespace dt
