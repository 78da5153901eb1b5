// SPDX-License-Identifier: MIT
// How a reduction site accumulates (the "noise switchboard"). Kernels receive the mode in their
// Params and must honour it. The mode names below are the one table of them (what users type);
// parsing flags belongs to the apps, the reduce-site registry to the engine (engine/noise/).
//
//   kTree      leaves summed in index order, combined by reduce_tree.h's fixed pairwise tree.
//              Deterministic; the default.
//   kAtomic    threads add into shared outputs with atomic float adds (atomic_add.h). The order
//              is whatever the scheduler makes it: genuinely nondeterministic, on purpose.
//   kKahan     Neumaier-compensated leaves over the same fixed chunking, combined by the same
//              tree with kahan_merge (accum_kahan.h). Deterministic.
//   kExact     the exact real sum of the float32 inputs rounded once to float32, round to
//              nearest even (accum_exact.h). Independent of any order or partition.
//   kPermuted  the leaves summed sequentially in a seeded pseudo-random order
//              (accum_permuted.h): replayable "implementation noise".
#pragma once
#include <cstdint>
#include <iterator>

#include "kernels/common/hd.h"

namespace dt::kernels::common {

enum class AccumMode : uint8_t {
    kTree = 0,
    kAtomic = 1,
    kKahan = 2,
    kExact = 3,
    kPermuted = 4,
};

/// Every mode, in enum order.
inline constexpr AccumMode kAccumModes[] = {AccumMode::kTree, AccumMode::kAtomic, AccumMode::kKahan,
                                            AccumMode::kExact, AccumMode::kPermuted};
/// The name of each mode, indexed by its enum value (host only).
inline constexpr const char* kAccumModeNames[] = {"tree", "atomic", "kahan", "exact", "permuted"};
static_assert(std::size(kAccumModeNames) == std::size(kAccumModes));

/// "tree", "atomic", "kahan", "exact", "permuted" (host only).
constexpr const char* accum_mode_name(AccumMode mode) {
    return kAccumModeNames[static_cast<int>(mode)];
}

/// A mode plus what the mode needs at run time. Only kPermuted uses permute_key: the per-call
/// key permute_key(run seed, site, call) of accum_permuted.h, derived by the engine for each
/// kernel call (so a kernel sees one 64-bit value and never counts calls itself).
struct AccumSpec {
    AccumMode mode;
    uint64_t permute_key;
};

DT_HD constexpr AccumSpec accum_spec(AccumMode mode, uint64_t permute_key = 0) {
    return AccumSpec{mode, permute_key};
}

}  // namespace dt::kernels::common
