// SPDX-License-Identifier: MIT
// The machine's ceilings, measured. FMA: how many float32 fused multiply-adds per second its cores
// retire at one vector width when nothing else limits them. Machines here differ by 2x (one or
// two FMA pipes, AVX-512 split or not), so dt_roofline measures the ceiling in the same run as
// the layers it compares with it. Memory: the read bandwidth of a buffer no cache holds.
#pragma once

namespace dt::bench {

/// GFLOP/s (2 per lane per fma) of `threads` threads, each running independent fma chains on
/// registers of `bits` (128, 256 or 512) for about `seconds`. 0 when the CPU lacks FMA at that
/// width (AVX2 and FMA for 128 and 256, AVX-512F for 512).
double fma_peak_gflops(int bits, int threads, double seconds = 0.2);

/// GB/s of `threads` threads reading a buffer far larger than the caches (256 MiB), each its own
/// part, summed as integers: the memory ceiling a kernel that streams its operands meets.
double read_bandwidth_gbps(int threads);

}  // namespace dt::bench
