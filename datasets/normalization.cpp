// SPDX-License-Identifier: MIT
// Normalisation settings and channel statistics (contract in normalization.h).
#include "datasets/normalization.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "engine/core/error.h"

namespace dt {

Normalization standardize(std::vector<float> mean, std::vector<float> stddev) {
    Normalization n;
    n.kind = NormKind::kStandardize;
    n.mean = std::move(mean);
    n.stddev = std::move(stddev);
    return n;
}

Normalization channel_statistics(const Dataset& ds) {
    const int C = ds.channels;
    const int64_t plane = int64_t{ds.height} * ds.width;
    DT_CHECK_VALUE(ds.size > 0 && C > 0 && plane > 0, "channel_statistics: ", ds.name, " has ",
                   ds.size, " examples of ", C, "x", ds.height, "x", ds.width,
                   " (expected at least one example with at least one pixel)");
    DT_CHECK_VALUE(static_cast<int64_t>(ds.pixels.size()) == ds.size * ds.sample_pixels(),
                   "channel_statistics: ", ds.name, " has ", ds.pixels.size(),
                   " pixel bytes, expected ", ds.size * ds.sample_pixels());
    std::vector<int64_t> hist(static_cast<std::size_t>(C) * 256, 0);
    for (int64_t n = 0; n < ds.size; ++n) {
        for (int c = 0; c < C; ++c) {
            const uint8_t* p = ds.pixels.data() + (n * C + c) * plane;
            int64_t* h = hist.data() + c * 256;
            for (int64_t i = 0; i < plane; ++i) ++h[p[i]];
        }
    }
    std::vector<float> mean(static_cast<std::size_t>(C)), stddev(static_cast<std::size_t>(C));
    const double count = static_cast<double>(ds.size) * static_cast<double>(plane);
    for (int c = 0; c < C; ++c) {
        const int64_t* h = hist.data() + c * 256;
        double m = 0;  // ORDER: bins 0..255 ascending, in double
        for (int v = 0; v < 256; ++v) m += static_cast<double>(h[v]) * (v / 255.0);
        m /= count;
        double var = 0;  // ORDER: bins 0..255 ascending, in double, around the rounded mean m
        for (int v = 0; v < 256; ++v)
            var += static_cast<double>(h[v]) * (v / 255.0 - m) * (v / 255.0 - m);
        var /= count;
        mean[static_cast<std::size_t>(c)] = static_cast<float>(m);
        // A constant channel (std 0) would divide by zero: use 1, i.e. only subtract the mean.
        stddev[static_cast<std::size_t>(c)] = var > 0 ? static_cast<float>(std::sqrt(var)) : 1.0f;
    }
    return standardize(std::move(mean), std::move(stddev));
}

}  // namespace dt
