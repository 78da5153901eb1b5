// SPDX-License-Identifier: MIT
// The processes of a data-parallel run and what they exchange (issue 21): rank, size, and the
// all-reduce of the site grad.allreduce behind one interface, so that an NCCL implementation for
// the CUDA backend can follow the MPI one. A build without MPI, or a process not launched by
// mpirun, is a world of one.
// All-reduce of float arrays, by the site's accumulation mode (every rank gets the same bits):
//   atomic    MPI_Allreduce(MPI_SUM) on the floats: MPI's order (topology, algorithm choice).
//   tree      per element the left-complete tree (kernels/common/reduce_tree.h) over the
//             ranks' partials 0..P-1: identical run to run for a fixed P.
//   kahan     that tree over (partial, +0) with kahan_merge, then kahan_value.
//   permuted  +0 + partial(o[0]) + partial(o[1]) + ..., o = permute_order(P, permute_key).
//   exact     the exact sum of the P rounded partials, rounded once ("exact across ranks").
// The fixed-order modes move an ordinary all-reduce's bytes: the rank that owns a block of
// elements receives every rank's partials of it, combines them as above, and all ranks gather
// the combined blocks (combine_rank_partials is the combination).
// allreduce_exact sums exact accumulators before any rounding (their integer limbs, which add
// associatively): the sum of a set of floats split over ranks in any way is the same bits for
// any P, the guarantee the exact modes give across process counts. They travel packed (44 bytes,
// engine/runtime/exact_pack.h). allreduce_exact_rounded gives only the rounded sums (gradients):
// per window of 64 elements the ranks agree on a bit range (an all-reduce of three ints); where
// every rank's value fits an int64 with room for the sum, value >> lo is reduce-scattered with
// MPI_SUM on integers, each rank rounds its share, and the floats are all-gathered: 8 + 4 bytes
// per element. Windows too wide, or holding an infinity or NaN, go as packed accumulators
// (44 + 4 bytes).
// Every block that goes to another rank travels with a checksum (engine/runtime/message_check.h;
// the block a rank keeps is copied in memory, unchecked); a block that does not match ends the
// job through abort before any sum made from it is returned.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"

namespace dt {

class Collective {
 public:
    virtual ~Collective() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// The processes of this run on this host (MPI_COMM_TYPE_SHARED), this one included.
    virtual int host_processes() const = 0;
    /// "single" (one process) or "mpi (Open MPI ...)".
    virtual std::string describe() const = 0;

    /// data[0 .. n) = the sum over ranks of every rank's data[0 .. n), as `spec` says (above).
    virtual void allreduce(float* data, int64_t n, const kernels::common::AccumSpec& spec) = 0;
    /// accs[0 .. n) = the exact sum over ranks (normalised; limbs added, specials or'ed).
    virtual void allreduce_exact(kernels::common::ExactAcc* accs, int64_t n) = 0;
    /// out[0 .. n) = exact_value of the exact sum over ranks of accs[0 .. n) (rounded once).
    /// Returns the bytes this process handed to MPI (0 for a world of one).
    virtual int64_t allreduce_exact_rounded(const kernels::common::ExactAcc* accs, int64_t n,
                                            float* out) = 0;
    /// bytes from rank `root` to every rank.
    virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
    virtual void barrier() = 0;
    /// A second lane: the same processes over a communicator of its own, whose collectives may
    /// run on another thread while this one's run (MPI_THREAD_MULTIPLE). Every process calls it,
    /// in the same order; each lane's collectives are matched among themselves. Throws Error when
    /// the MPI library gives no such thread support.
    virtual std::unique_ptr<Collective> duplicate() = 0;
    /// Ends every process of the run with `why` on stderr and exit status 1 (no hang).
    [[noreturn]] virtual void abort(const std::string& why) = 0;
};

/// The run's processes: MPI's world when this build has MPI and mpirun launched the process
/// (MPI is initialised on first use and finalised at exit), else a world of one.
Collective& world();

/// Whether this build can run under mpirun.
bool mpi_built();

/// True on every rank when `mine` is true on every rank (a collective call): a choice made per
/// host, such as --overlap auto's, that all processes must share.
bool all_ranks(Collective& ranks, bool mine);

/// The tree / kahan / permuted / exact combination of P rank partials (gathered: P rows of n)
/// into out[0 .. n): what allreduce does after an all-gather, on every rank alike.
void combine_rank_partials(const float* gathered, int P, int64_t n,
                           const kernels::common::AccumSpec& spec, float* out);

/// combine_rank_partials in the tree mode, with leave to overwrite the rows (the tree's pairs
/// added in place, a level at a time: the same bits, no buffer of its own), that also takes, as
/// it first reads them, each row's word_check (engine/runtime/message_check.h, weights from
/// `first`) into checks[0 .. P) and the result's into *out_check: no pass over the data of its
/// own for the receiver's checks.
void combine_tree_rows_checked(float* rows, int P, int64_t n, float* out, int64_t first,
                               uint64_t* checks, uint64_t* out_check);

}  // namespace dt
