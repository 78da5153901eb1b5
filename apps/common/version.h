// SPDX-License-Identifier: MIT
#pragma once

namespace dt {

/// detrain's version, as recorded in result.json.
const char* version_string();

/// Version of the training recipe: everything that decides the bits of a run's weights for given
/// flags (kernel summation orders, initialisation, data order, optimizer formulas). Recorded as
/// "recipe" in result.json and checkpoints. Same recipe + same flags = same weights_sha256 on any
/// x86-64 machine, thread count and instruction set. A change that changes trained bits on
/// purpose bumps it and updates the golden hashes (tests/golden/golden_test.cpp) in the same
/// commit, with the reason in the message.
constexpr int kRecipeVersion = 1;

}  // namespace dt
