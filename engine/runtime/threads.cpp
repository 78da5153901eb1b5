// SPDX-License-Identifier: MIT
#include "engine/runtime/threads.h"

#include <omp.h>

#include "engine/core/error.h"

namespace dt {

void set_num_threads(int n) {
    DT_CHECK_VALUE(n >= 1, "thread count must be at least 1, got ", n);
    omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace dt
