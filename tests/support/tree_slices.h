// SPDX-License-Identifier: MIT
// The slice-stack use of the tree reductions (kernels/common/reduce_tree.h): n leaves of `len`
// elements each, pushed onto the slot stack in two column slices and finished in two others, as a
// kernel that splits a row between workers does. Tests compare it with one tree per element.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/reduce_tree.h"

namespace dt::test {

/// The slots after leaves (n x len, leaf c at row c) went through push(slots, stride, lo, hi, c)
/// over the columns [0, 2) and [2, len), then finish(slots, stride, lo, hi, n) over [0, 3) and
/// [3, len): element i's total is slots[i].
template <class T, class Push, class Finish>
std::vector<T> slice_stack(const std::vector<T>& leaves, int64_t n, int64_t len, Push push,
                           Finish finish) {
    std::vector<T> slots(static_cast<std::size_t>(kernels::common::tree_slots(n) * len));
    for (int64_t c = 0; c < n; ++c) {
        T* slot = slots.data() + kernels::common::tree_leaf_slot(c) * len;
        for (int64_t i = 0; i < len; ++i) slot[i] = leaves[c * len + i];
        push(slots.data(), len, 0, 2, c);
        push(slots.data(), len, 2, len, c);
    }
    finish(slots.data(), len, 0, 3, n);
    finish(slots.data(), len, 3, len, n);
    return slots;
}

}  // namespace dt::test
