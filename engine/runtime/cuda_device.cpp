// SPDX-License-Identifier: MIT
#include "engine/runtime/cuda_device.h"

#include <cstdlib>

#include "engine/core/error.h"
#include "engine/runtime/cuda_code.h"

#if DT_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace dt::cuda_device {

#if DT_WITH_CUDA

namespace {

namespace kc = kernels::cuda;

struct Probe {
    bool ok = false;  // a device, and this build's kernels run on it
    kc::DeviceInfo info;
    std::string why;
    CodeReport code;  // of a device found (its text ends describe())
};

/// What this build's code does on the device (cuda_code.h).
CodeReport code_report(const kc::DeviceInfo& d) {
    return device_code_report(kc::build_architectures(), d.major, d.minor,
                              {d.code_runs, d.binary_version, d.code_error});
}

/// This process's rank on its machine as the MPI launcher tells it (Open MPI, MPICH/Hydra,
/// Slurm), 0 when none does: each process of a machine takes GPU local_rank % GPUs.
int local_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
        const char* v = std::getenv(name);
        if (v != nullptr && *v != '\0') return std::atoi(v);
    }
    return 0;
}

const Probe& probe() {
    static const Probe p = [] {
        Probe q;
        q.ok = kc::probe_device(local_rank(), &q.info, &q.why);
        if (q.ok) {
            q.code = code_report(q.info);
            q.ok = q.code.fit != CodeFit::kNone;
            if (!q.ok) q.why = q.code.text;
        }
        return q;
    }();
    return p;
}

constexpr std::size_t kAlignment = 256;  // cudaMalloc's own alignment; vector loads need 16
constexpr std::size_t kCacheMin = 0;     // every size: a free stalls the device
constexpr std::size_t kCacheMax = std::size_t{64} << 30;

std::size_t block_size(std::size_t bytes) {
    const std::size_t n = bytes == 0 ? 1 : bytes;
    return (n + kAlignment - 1) / kAlignment * kAlignment;
}

BlockCache& cache() {
    static BlockCache* c =
        new BlockCache({kc::device_malloc, kc::device_free}, kCacheMin, kCacheMax);
    return *c;
}

void* allocate(std::size_t bytes) {
    void* p = cache().allocate(block_size(bytes));
    kc::poison_undefined(p, bytes);  // DT_CUDA_POISON=1: undefined contents read as NaN
    return p;
}
void release(void* p, std::size_t bytes) { cache().release(p, block_size(bytes)); }
void zero(void* p, std::size_t n) { kc::device_zero(p, n); }
void copy(void* d, const void* s, std::size_t n) { kc::device_copy(d, s, n); }
void to_host(void* d, const void* s, std::size_t n) {
    kc::copy_to_host(d, s, n);
    check();
}
void from_host(void* d, const void* s, std::size_t n) {
    kc::copy_from_host(d, s, n);
    check();
}

static_assert(kReadLaterMaxBytes == kc::kReadLaterMaxBytes);
uint64_t to_host_later(const void* s, std::size_t n) {
    const uint64_t ticket = kc::read_later(s, n);
    check();
    return ticket;
}
void take_later(uint64_t ticket, void* d, std::size_t n) {
    kc::take_read(ticket, d, n);
    check();
}

std::size_t peak_bytes() { return cache().stats().peak_held_bytes; }

constexpr DeviceMemory kCudaMemory{allocate,  release,       zero,       copy,      to_host,
                                   from_host, to_host_later, take_later, peak_bytes};

}  // namespace

bool built() { return true; }

bool available(std::string* why) {
    const Probe& p = probe();
    if (!p.ok && why != nullptr) *why = str("no usable CUDA device (", p.why, ")");
    return p.ok;
}

std::string describe() {
    const Probe& p = probe();
    const kc::DeviceInfo& d = p.info;
    if (!p.ok && d.count == 0) return str("none (", p.why, ")");  // no device found
    return str(p.ok ? "" : "unusable: ", "device ", d.ordinal, " of ", d.count, ": ", d.name,
               ", sm_", d.major, d.minor, ", ",
               static_cast<double>(d.memory_bytes) / double(1u << 30), " GiB, ", d.multiprocessors,
               " SMs, driver ", d.driver_version / 1000, ".", d.driver_version % 1000 / 10,
               ", runtime ", d.runtime_version / 1000, ".", d.runtime_version % 1000 / 10, "; ",
               p.code.text);
}

std::string build_architectures() { return kc::build_architectures(); }

KernelWays kernel_ways() {
    const kc::TileChoice tile = kc::tile_choice();
    return {tile == kc::TileChoice::kLarge   ? "large"
            : tile == kc::TileChoice::kSmall ? "small"
            : tile == kc::TileChoice::kTiny  ? "tiny"
                                             : "auto",
            kc::exact_wgrad_way() == kc::ExactWgradWay::kLimbAtomics ? "limbs" : "leaves",
            kc::channel_leaves_way() == kc::ChannelLeavesWay::kRows ? "rows" : "staged",
            kc::poison_setting()};
}

void require() {
    std::string why;
    if (!available(&why)) {
        throw DeviceError(str("device cuda: ", why, " (hint: run on a machine with an NVIDIA GPU ",
                              "and driver, or use --device cpu)"));
    }
}

const DeviceMemory& memory() {
    require();
    return kCudaMemory;
}

void check() {
    const std::string e = kc::take_error();
    if (e.empty()) return;
    // A kernel's scratch buffer that did not fit: the same hint as a tensor's (Storage).
    const bool memory = e.find("cudaErrorMemoryAllocation") != std::string::npos;
    throw DeviceError(memory ? str("device cuda: ", e, " (", kOutOfMemoryHint, ")")
                             : str("device cuda: ", e));
}

void synchronize() {
    kc::synchronize();
    check();
}

BlockCache::Stats memory_stats() { return cache().stats(); }
void trim() { cache().trim(); }

#else  // no CUDA in this build

namespace {
constexpr const char* kNotBuilt =
    "this build of detrain has no CUDA backend (it was configured without nvcc; hint: install "
    "the CUDA toolkit and rebuild with -DDT_ENABLE_CUDA=ON, or use --device cpu)";
}

bool built() { return false; }
bool available(std::string* why) {
    if (why != nullptr) *why = kNotBuilt;
    return false;
}
std::string describe() { return str("none (", kNotBuilt, ")"); }
std::string build_architectures() { return ""; }
KernelWays kernel_ways() { return {}; }
void require() { throw DeviceError(str("device cuda: ", kNotBuilt)); }
const DeviceMemory& memory() { throw DeviceError(str("device cuda: ", kNotBuilt)); }
void check() {}
void synchronize() {}
BlockCache::Stats memory_stats() { return {}; }
void trim() {}

#endif

}  // namespace dt::cuda_device
