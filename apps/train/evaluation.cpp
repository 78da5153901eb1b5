// SPDX-License-Identifier: MIT
#include "apps/train/evaluation.h"

#include <algorithm>
#include <cmath>

#include "apps/train/batches_ahead.h"
#include "engine/autograd/tape.h"
#include "engine/ops/softmax_xent.h"
#include "models/generate.h"

namespace dt {

Evaluation evaluate(Model& model, const BatchLoader& loader, const Dataset& test, uint64_t epoch,
                    uint64_t dropout_seed) {
    autograd::NoGradGuard no_grad;
    Evaluation ev;
    const auto R = static_cast<std::size_t>(model.rows_per_sample());
    const bool per_token = R > 1;
    const std::size_t rows = static_cast<std::size_t>(test.size) * R;
    ev.predictions.assign(rows, -1);
    const auto K = static_cast<std::size_t>(test.num_classes);
    ev.logits.assign(rows * K, 0.0f);
    if (per_token) ev.targets.assign(rows, -1);
    std::vector<double> nll(per_token ? rows : 0);
    BatchesAhead batches(
        loader.num_batches(), [&loader](int64_t b) { return loader.batch(0, b); },
        model.device() != Device::kCpu);
    for (int64_t b = 0; b < loader.num_batches(); ++b) {
        const Batch batch = batches.take(b);
        ForwardContext ctx;
        ctx.training = false;
        ctx.epoch = epoch;
        ctx.dropout_seed = dropout_seed;
        ctx.sample_ids = batch.sample_ids;
        // Predictions are read on the host: the logits come back from the model's device.
        const Tensor logits = model.forward(batch.images.to(model.device()), ctx).to(Device::kCpu);
        const std::vector<int64_t> pred = argmax_rows(logits);
        const float* lp = logits.data<float>();
        const int64_t* lab = batch.labels.data<int64_t>();
        for (std::size_t i = 0; i < pred.size(); ++i) {  // row i: token i % R of sample i / R
            const std::size_t id = static_cast<std::size_t>(batch.sample_ids[i / R]) * R + i % R;
            ev.predictions[id] = pred[i];
            std::copy_n(lp + i * K, K, ev.logits.begin() + static_cast<std::ptrdiff_t>(id * K));
            if (per_token) {
                ev.targets[id] = static_cast<int32_t>(lab[i]);
                nll[id] = -token_log_prob(lp + i * K, static_cast<int64_t>(K), lab[i]);
            }
        }
    }
    if (per_token) {
        double total = 0, correct = 0;
        for (std::size_t i = 0; i < rows; ++i) {  // ORDER: rows in index order, in double
            total += nll[i];
            correct += ev.predictions[i] == ev.targets[i] ? 1 : 0;
        }
        ev.loss = rows > 0 ? total / static_cast<double>(rows) : std::nan("");
        ev.accuracy = rows > 0 ? correct / static_cast<double>(rows) : 0.0;
        return ev;
    }
    std::vector<int64_t> correct(static_cast<std::size_t>(test.num_classes), 0);
    std::vector<int64_t> total(static_cast<std::size_t>(test.num_classes), 0);
    int64_t all_correct = 0;
    for (int64_t i = 0; i < test.size; ++i) {
        const auto label = static_cast<std::size_t>(test.labels[static_cast<std::size_t>(i)]);
        const bool ok = ev.predictions[static_cast<std::size_t>(i)] == static_cast<int64_t>(label);
        ++total[label];
        correct[label] += ok;
        all_correct += ok;
    }
    ev.accuracy =
        test.size > 0 ? static_cast<double>(all_correct) / static_cast<double>(test.size) : 0.0;
    for (std::size_t c = 0; c < total.size(); ++c) {
        ev.per_class.push_back(total[c] > 0
                                   ? static_cast<double>(correct[c]) / static_cast<double>(total[c])
                                   : std::nan(""));
    }
    return ev;
}

}  // namespace dt
