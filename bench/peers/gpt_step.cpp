// SPDX-License-Identifier: MIT
// One GPT training step of detrain, written out for the PyTorch cross-check
// (bench/peers/pytorch_gpt.py check): the default GPT initialised from seed 0, the fixed batch
// of BM_TrainStep/gpt (bench/trainee.h: 8 sequences of 128 Philox bytes, each target the next
// byte), forward -> softmax cross-entropy -> backward under one --impl preset, then one AdamW
// step with the GPT recipe's defaults (lr 3e-3, weight decay 0.01, betas 0.9/0.999, eps 1e-8).
//
// Writes a safetensors file: tokens (B, T) and targets (B*T) int64, logits (B*T, 256) and loss (1),
// and per trainable parameter NAME: init.NAME, grad.NAME and step.NAME (the weights after the
// step), float32.
//
// usage: dt_gpt_step --out FILE [--impl deterministic|exact|kahan|...] [--threads N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "bench/trainee.h"
#include "engine/io/safetensors.h"
#include "engine/runtime/threads.h"

namespace {

int usage(const char* why) {
    std::fprintf(stderr,
                 "dt_gpt_step: %s\nusage: dt_gpt_step --out FILE [--impl PRESET] [--threads N]\n",
                 why);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string out, impl = "deterministic";
    int threads = 2;
    for (int i = 1; i < argc; ++i) {
        const bool has_value = i + 1 < argc;
        if (!std::strcmp(argv[i], "--out") && has_value) {
            out = argv[++i];
        } else if (!std::strcmp(argv[i], "--impl") && has_value) {
            impl = argv[++i];
        } else if (!std::strcmp(argv[i], "--threads") && has_value) {
            threads = std::atoi(argv[++i]);
        } else {
            return usage((std::string("unknown or incomplete argument ") + argv[i]).c_str());
        }
    }
    if (out.empty()) return usage("--out is required");
    if (threads < 1) return usage("--threads must be at least 1");
    try {
        dt::set_num_threads(threads);
        const dt::ScopedReduceConfig scope(dt::bench::preset_specs(impl));
        dt::bench::Trainee t({"gpt", 3, 1, 128, 8, 0});
        dt::OptimizerConfig oc;
        oc.kind = "adamw";
        oc.weight_decay = 0.01f;
        t.optimizer = dt::make_optimizer(oc, t.model->trainable());

        dt::io::NamedTensors tensors{{"tokens", t.images}, {"targets", t.labels}};
        for (const dt::NamedParam& p : t.model->params())
            if (p.trainable) tensors.emplace_back("init." + p.name, p.tensor.clone());
        const dt::Tensor logits = t.model->forward(t.images, t.ctx);
        const dt::Tensor loss = dt::softmax_cross_entropy(logits, t.labels);
        t.optimizer->zero_grad();
        dt::autograd::backward(loss);
        tensors.emplace_back("logits", logits.clone());
        tensors.emplace_back("loss", dt::Tensor::from_vector({1}, {loss.item()}));
        for (const dt::NamedParam& p : t.model->params())
            if (p.trainable) tensors.emplace_back("grad." + p.name, p.tensor.grad().clone());
        t.optimizer->step(3e-3f);
        for (const dt::NamedParam& p : t.model->params())
            if (p.trainable) tensors.emplace_back("step." + p.name, p.tensor.clone());
        dt::io::save_safetensors(out, tensors, {{"impl", impl}});
        std::printf("dt_gpt_step: %s, loss %.9g -> %s\n", impl.c_str(),
                    static_cast<double>(loss.item()), out.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dt_gpt_step: %s\n", e.what());
        return 1;
    }
    return 0;
}
