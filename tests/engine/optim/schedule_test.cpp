// SPDX-License-Identifier: MIT
// Learning-rate schedules: values at chosen steps (warm-up ends, decay boundaries, the cosine
// midpoint and end) against the formulas of schedule.cpp, and validation errors.
#include "engine/optim/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace dt {
namespace {

ScheduleConfig kind(const std::string& k) {
    ScheduleConfig c;
    c.kind = k;
    return c;
}

TEST(Schedule, Constant) {
    EXPECT_EQ(learning_rate(kind("constant"), 0.05, 0, 10, 100), 0.05);
    EXPECT_EQ(learning_rate(kind("constant"), 0.05, 999, 10, 100), 0.05);
}

TEST(Schedule, StepDecaysAtEpochBoundaries) {
    ScheduleConfig c = kind("step");
    c.step_epochs = 3;
    c.gamma = 0.1;
    const int64_t S = 10;  // steps per epoch
    EXPECT_EQ(learning_rate(c, 1.0, 0, S, 1000), 1.0);
    EXPECT_EQ(learning_rate(c, 1.0, 29, S, 1000), 1.0);  // epoch 2, last step
    EXPECT_EQ(learning_rate(c, 1.0, 30, S, 1000), 0.1);  // epoch 3
    EXPECT_EQ(learning_rate(c, 1.0, 59, S, 1000), 0.1);
    EXPECT_EQ(learning_rate(c, 1.0, 60, S, 1000), (1.0 * 0.1) * 0.1);  // chained, not 0.01
    EXPECT_EQ(learning_rate(c, 1.0, 95, S, 1000), ((1.0 * 0.1) * 0.1) * 0.1);
    c.step_epochs = 2.5;  // decays at epochs 3 (3/2.5 = 1.2) and 5, never mid-epoch
    EXPECT_EQ(learning_rate(c, 2.0, 29, S, 1000), 2.0);
    EXPECT_EQ(learning_rate(c, 2.0, 30, S, 1000), 2.0 * 0.1);
    EXPECT_EQ(learning_rate(c, 2.0, 49, S, 1000), 2.0 * 0.1);
    EXPECT_EQ(learning_rate(c, 2.0, 50, S, 1000), (2.0 * 0.1) * 0.1);
}

TEST(Schedule, CosineWithWarmup) {
    ScheduleConfig c = kind("cosine");
    c.warmup_epochs = 1;
    c.min_lr = 0.001;
    const double lr = 0.1;
    const int64_t S = 10, T = 110, W = 10;
    EXPECT_DOUBLE_EQ(learning_rate(c, lr, 0, S, T), lr * 1 / W);
    EXPECT_DOUBLE_EQ(learning_rate(c, lr, 4, S, T), lr * 5 / W);
    EXPECT_EQ(learning_rate(c, lr, 9, S, T), lr);   // warm-up ends exactly at lr
    EXPECT_EQ(learning_rate(c, lr, 10, S, T), lr);  // cosine starts at lr
    const double pi = 3.14159265358979323846;
    auto cosine = [&](double progress) {
        return 0.001 + ((lr - 0.001) * (1.0 + std::cos(pi * progress))) / 2.0;
    };
    EXPECT_EQ(learning_rate(c, lr, 35, S, T), cosine(0.25));
    EXPECT_NEAR(learning_rate(c, lr, 60, S, T), 0.0505, 1e-15);  // midpoint
    EXPECT_EQ(learning_rate(c, lr, 109, S, T), cosine(99.0 / 100.0));
    EXPECT_EQ(learning_rate(c, lr, 110, S, T), 0.001);  // progress 1
    EXPECT_EQ(learning_rate(c, lr, 500, S, T), 0.001);  // clamped past the end
}

TEST(Schedule, CosineWithoutWarmupAndRoundedWarmup) {
    ScheduleConfig c = kind("cosine");
    EXPECT_EQ(learning_rate(c, 0.5, 0, 10, 100), 0.5);
    EXPECT_NEAR(learning_rate(c, 0.5, 50, 10, 100), 0.25, 1e-15);
    c.warmup_epochs = 0.25;  // 2.5 steps -> llround -> 3
    EXPECT_DOUBLE_EQ(learning_rate(c, 0.3, 0, 10, 100), 0.1);
    EXPECT_DOUBLE_EQ(learning_rate(c, 0.3, 2, 10, 100), 0.3);
    EXPECT_EQ(learning_rate(c, 0.3, 3, 10, 100), 0.3);
}

TEST(Schedule, Validation) {
    EXPECT_THROW(learning_rate(kind("linear"), 0.1, 0, 10, 100), ValueError);
    try {
        learning_rate(kind("linear"), 0.1, 0, 10, 100);
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("known: constant, step, cosine"), std::string::npos);
    }
    EXPECT_THROW(learning_rate(kind("constant"), 0.1, 0, 0, 100), ValueError);
    EXPECT_THROW(learning_rate(kind("constant"), 0.1, -1, 10, 100), ValueError);
    EXPECT_THROW(learning_rate(kind("constant"), -0.1, 0, 10, 100), ValueError);
    ScheduleConfig s = kind("step");
    s.step_epochs = 0;
    EXPECT_THROW(learning_rate(s, 0.1, 0, 10, 100), ValueError);
    s = kind("step");
    s.gamma = 0;
    EXPECT_THROW(learning_rate(s, 0.1, 0, 10, 100), ValueError);
    ScheduleConfig c = kind("cosine");
    c.warmup_epochs = 11;  // 110 steps > 100
    EXPECT_THROW(learning_rate(c, 0.1, 0, 10, 100), ValueError);
    c = kind("cosine");
    c.min_lr = 0.2;
    EXPECT_THROW(learning_rate(c, 0.1, 0, 10, 100), ValueError);
    c = kind("cosine");
    EXPECT_THROW(learning_rate(c, 0.1, 0, 10, 0), ValueError);
    c.warmup_epochs = -1;
    EXPECT_THROW(learning_rate(c, 0.1, 0, 10, 100), ValueError);
}

}  // namespace
}  // namespace dt
