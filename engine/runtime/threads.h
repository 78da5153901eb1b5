// SPDX-License-Identifier: MIT
// Thread count of the CPU kernels (OpenMP). Results never depend on it: kernels partition work by
// fixed-size pieces of data, never by the number of threads.
#pragma once

namespace dt {

/// Sets the number of OpenMP threads used by every kernel (n >= 1).
void set_num_threads(int n);
int num_threads();

}  // namespace dt
