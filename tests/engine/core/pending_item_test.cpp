// SPDX-License-Identifier: MIT
// PendingItem (engine/core/pending_item.h): the value of a one-element tensor, on the cpu at once
// and on a device through a copy read later, which costs a wait only when no wait since covered
// it (counted on the stand-in cuda device, tests/support/fake_cuda.h; the CUDA side is
// tests/kernels/cuda/read_later_test.cu).
#include "engine/core/pending_item.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/fake_cuda.h"

namespace dt {
namespace {

TEST(PendingItem, GivesTheValueOnTheCpu) {
    Tensor t = Tensor::full({1}, -2.5f);
    PendingItem v(t);
    t = Tensor();  // the tensor may go
    EXPECT_EQ(v.get(), -2.5f);
    EXPECT_EQ(v.get(), -2.5f);
}

TEST(PendingItem, NeedsOneFloatElement) {
    EXPECT_THROW(PendingItem(Tensor::zeros({2}, DType::kF32)), ShapeError);
    EXPECT_THROW(PendingItem(Tensor::zeros({1}, DType::kI32)), Error);
}

TEST(PendingItem, OnADeviceWaitsOnlyWhenNoWaitCoveredIt) {
    const test::ScopedFakeCuda device;
    Tensor a = Tensor::full({1}, 3.0f, Device::kCuda);
    Tensor b = Tensor::full({1, 1}, 7.0f, Device::kCuda);
    const std::size_t waits = test::ScopedFakeCuda::copies_to_host();
    PendingItem first(a), second(b);
    EXPECT_EQ(test::ScopedFakeCuda::reads_later(), 2u);
    EXPECT_EQ(test::ScopedFakeCuda::copies_to_host(), waits);  // issuing them does not wait
    EXPECT_EQ(first.get(), 3.0f);  // nothing waited since: this take waits
    EXPECT_EQ(test::ScopedFakeCuda::copies_to_host(), waits + 1);
    EXPECT_EQ(a.item(), 3.0f);      // a wait, after the second read
    EXPECT_EQ(second.get(), 7.0f);  // covered by it: no wait
    EXPECT_EQ(second.get(), 7.0f);
    EXPECT_EQ(test::ScopedFakeCuda::copies_to_host(), waits + 2);
}

}  // namespace
}  // namespace dt
