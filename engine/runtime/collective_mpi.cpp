// SPDX-License-Identifier: MIT
// The MPI world of engine/runtime/collective.h (built with MPI only). MPI is initialised when a
// process launched by mpirun first asks for the world, and finalised at exit. Errors return
// (MPI_ERRORS_RETURN) and abort the whole job with a message, so that a rank that dies or fails
// makes the others exit instead of hanging in a collective.
#if DT_WITH_MPI
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/collective.h"
#include "engine/runtime/exact_pack.h"
#include "engine/runtime/message_check.h"

namespace dt {

namespace c = kernels::common;

namespace {

/// True when a launcher (Open MPI's mpirun, or a PMI-based one) started this process.
bool launched_by_mpirun() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(v) != nullptr) return true;
    return false;
}

class MpiWorld final : public Collective {
 public:
    /// MPI's world: MPI initialised (thread level MULTIPLE, for duplicate's lanes) if it is not.
    MpiWorld() {
        int ok = 0;
        MPI_Initialized(&ok);
        if (!ok)
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_);
        else
            MPI_Query_thread(&thread_level_);
        set_up(MPI_COMM_WORLD);
        std::atexit([] {
            int done = 0;
            MPI_Finalized(&done);
            if (!done) MPI_Finalize();
        });
    }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int host_processes() const override { return host_processes_; }
    std::string describe() const override {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(lib, &len);
        std::string v(lib, static_cast<std::size_t>(len));
        v = v.substr(0, v.find_first_of(",\n"));
        return "mpi, rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" + v +
               ")";
    }

    void allreduce(float* data, int64_t n, const c::AccumSpec& spec) override {
        if (spec.mode == c::AccumMode::kAtomic) {  // MPI's own order: no ORDER on purpose
            check(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_FLOAT, MPI_SUM, comm_),
                  "MPI_Allreduce");
            return;
        }
        if (n <= 0) return;
        // Blocks of `block` elements, one per rank (the last one padded with zeros): rank r
        // receives every rank's partials of block r (MPI_Alltoall), combines them element by
        // element as combine_rank_partials does after a full gather (the tree in place,
        // combine_tree_rows_checked), and every rank then gathers the combined blocks. The same
        // operations per element, so the same bits, at an ordinary all-reduce's traffic: 2 (P - 1)
        // / P of the floats sent per rank instead of P - 1.
        const int64_t block = (n + size_ - 1) / size_, padded = block * size_;
        const float* send = data;
        if (padded != n) {
            float* copy = grow(send_, padded);
            std::copy(data, data + n, copy);
            std::fill(copy + n, copy + padded, 0.0f);
            send = copy;
        }
        float* parts = grow(parts_, padded);  // P rows of `block`: row r from rank r
        const uint64_t* expected = send_checks(
            send, block, /*own=*/false,
            [](const float* v, int64_t m, int64_t at) { return word_check(v, m, at); });
        spoil(const_cast<float*>(send), block);
        check(MPI_Alltoall(send, count(block), MPI_FLOAT, parts, count(block), MPI_FLOAT, comm_),
              "MPI_Alltoall (partials to their block's rank)");
        // Whole blocks: the combined block lands in data itself, gathered there in place.
        float* combined = padded == n ? data : grow(combined_, padded);
        float* mine = combined + block * rank_;
        uint64_t* got = grow(checks_got_, size_);
        uint64_t mine_check = 0;
        if (spec.mode == c::AccumMode::kTree) {  // the checks taken while combining
            combine_tree_rows_checked(parts, size_, block, mine, block * rank_, got, &mine_check);
        } else {
            for (int r = 0; r < size_; ++r)
                if (r != rank_) got[r] = word_check(parts + r * block, block, block * rank_);
            combine_rank_partials(parts, size_, block, spec, mine);
            mine_check = word_check(mine, block, block * rank_);
        }
        // A spoiled block ends the job here, before its sum leaves this call.
        for (int r = 0; r < size_; ++r)
            if (r != rank_) verify(got[r] == expected[r], r, "partials");
        gather_checked(combined, block, "combined sums", mine_check);
        if (combined != data) std::copy(combined, combined + n, data);
    }

    void allreduce_exact(c::ExactAcc* accs, int64_t n) override {
        PackedExactAcc* packed = grow(packed_, n);
        for (int64_t i = 0; i < n; ++i) packed[i] = exact_pack(accs[i]);
        // Every rank's checksum (values mod 2^61 - 1 add as the values do) against the sum's.
        uint64_t mine = packed_check(packed, n, 0);
        uint64_t* all = grow(checks_in_, size_);
        check(MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm_),
              "MPI_Allgather (checksums)");
        spoil(packed, n / size_);
        check(MPI_Allreduce(MPI_IN_PLACE, packed, count(n), packed_type_, packed_sum_, comm_),
              "MPI_Allreduce (exact accumulators)");
        uint64_t want = 0;
        for (int r = 0; r < size_; ++r) want = check_prime_add(want, all[r]);
        verify(packed_check(packed, n, 0) == want, -1, "exact totals");
        for (int64_t i = 0; i < n; ++i) accs[i] = exact_unpack(packed[i]);
    }

    int64_t allreduce_exact_rounded(const c::ExactAcc* accs, int64_t n, float* out) override {
        if (n <= 0) return 0;
        // Windows: per block of kWindow elements, over every rank, the least set bit of the
        // accumulators' values, a bound on their bits and whether one holds an infinity or NaN
        // (one MPI_MAX of -lo, hi, special). A block whose values fit int64s with room for P of
        // them (compact) travels as value >> lo, summed by MPI_SUM on integers: exact in any
        // order, 8 bytes instead of a packed accumulator's 44. The other blocks go packed.
        // One pass over the accumulators: each value as an int64 above its own least bit
        // (own_lo), where it fits; the window then only shifts it.
        const int64_t blocks = (n + kWindow - 1) / kWindow;
        int32_t* meta = grow(meta_, 3 * blocks);
        int64_t* own = grow(own_, n);
        int32_t* own_lo = grow(own_lo_, n);
        for (int64_t b = 0; b < blocks; ++b) {
            int32_t lo = INT32_MAX, hi = 0, special = 0;
            for (int64_t i = b * kWindow; i < std::min(n, (b + 1) * kWindow); ++i) {
                special |= accs[i].special != 0u ? 1 : 0;
                int32_t e_hi = 0;
                if (exact_bits_shifted(accs[i], &own_lo[i], &e_hi, &own[i]))
                    lo = std::min(lo, own_lo[i]), hi = std::max(hi, e_hi);
            }
            meta[3 * b] = -lo, meta[3 * b + 1] = hi, meta[3 * b + 2] = special;
        }
        check(MPI_Allreduce(MPI_IN_PLACE, meta, count(3 * blocks), MPI_INT32_T, MPI_MAX, comm_),
              "MPI_Allreduce (exact windows)");
        int head = 0;  // ceil(log2 P): bits P values may add
        while ((1 << head) < size_) ++head;
        auto empty = [&](int64_t b) { return meta[3 * b] == -INT32_MAX; };  // zeros only
        auto compact = [&](int64_t b) {
            return meta[3 * b + 2] == 0 && (empty(b) || meta[3 * b + 1] + meta[3 * b] + head <= 62);
        };
        const int64_t block = (n + size_ - 1) / size_, padded = block * size_;
        int64_t* vals = grow(vals_, padded);
        std::vector<int64_t>& wide = wide_;
        wide.clear();
        for (int64_t b = 0; b < blocks; ++b) {
            const int64_t i0 = b * kWindow, i1 = std::min(n, i0 + kWindow);
            for (int64_t i = i0; i < i1; ++i) {
                vals[i] = 0;
                if (!compact(b))
                    wide.push_back(i);
                else if (own[i] != 0)  // hi - window lo <= 62: the shift keeps it exact
                    vals[i] = own[i] * (int64_t{1} << (own_lo[i] + meta[3 * b]));
            }
        }
        std::fill(vals + n, vals + padded, 0);
        int64_t* mine = grow(mine64_, block);
        const uint64_t* parts = send_checks(
            vals, block, /*own=*/true,
            [](const int64_t* v, int64_t m, int64_t at) { return word_check(v, m, at); });
        spoil(vals, block);
        check(MPI_Reduce_scatter_block(vals, mine, count(block), MPI_INT64_T, MPI_SUM, comm_),
              "MPI_Reduce_scatter_block (compact exact sums)");
        uint64_t want = 0;  // linear: the sum's checksum is the sum of the parts'
        for (int r = 0; r < size_; ++r) want += parts[r];
        verify(word_check(mine, block, block * rank_) == want, -1, "compact exact sums");
        float* rounded = grow(rounded_, padded);
        for (int64_t k = 0; k < block; ++k) {  // the one rounding
            const int64_t i = block * rank_ + k, b = i / kWindow;
            rounded[i] =
                i < n && compact(b) && !empty(b) ? exact_value_scaled(mine[k], -meta[3 * b]) : 0.0f;
        }
        gather_checked(rounded, block, "rounded exact sums");
        std::copy(rounded, rounded + n, out);
        const int64_t sent = 12 * blocks + (8 + 4) * n;
        return sent + (wide.empty() ? 0 : rounded_packed(accs, wide, out));
    }

    /// out[w[j]] = exact_value of the sum over ranks of accs[w[j]], packed accumulators summed by
    /// detrain's MPI op: blocks of the list, one per rank, each summed and rounded by its rank,
    /// then gathered. Returns the bytes this rank handed to MPI.
    int64_t rounded_packed(const c::ExactAcc* accs, const std::vector<int64_t>& w, float* out) {
        const int64_t m = static_cast<int64_t>(w.size());
        const int64_t block = (m + size_ - 1) / size_, padded = block * size_;
        PackedExactAcc* packed = grow(packed_, padded);
        for (int64_t j = 0; j < m; ++j) packed[j] = exact_pack(accs[w[j]]);
        std::fill(packed + m, packed + padded, PackedExactAcc{});  // the empty accumulator
        PackedExactAcc* mine = grow(mine_, block);
        const uint64_t* parts = send_checks(
            packed, block, /*own=*/true,
            [](const PackedExactAcc* v, int64_t m, int64_t at) { return packed_check(v, m, at); });
        check(
            MPI_Reduce_scatter_block(packed, mine, count(block), packed_type_, packed_sum_, comm_),
            "MPI_Reduce_scatter_block (exact accumulators)");
        uint64_t want = 0;  // values mod 2^61 - 1 add as the values do
        for (int r = 0; r < size_; ++r) want = check_prime_add(want, parts[r]);
        verify(packed_check(mine, block, block * rank_) == want, -1, "exact accumulators");
        float* rounded = grow(wide_rounded_, padded);
        for (int64_t k = 0; k < block; ++k)  // the one rounding
            rounded[block * rank_ + k] = c::exact_value(exact_unpack(mine[k]));
        gather_checked(rounded, block, "rounded exact sums");
        for (int64_t j = 0; j < m; ++j) out[w[j]] = rounded[j];
        return static_cast<int64_t>(sizeof(PackedExactAcc)) * m + 4 * block;
    }

    void broadcast(void* data, std::size_t bytes, int root) override {
        check(MPI_Bcast(data, count(static_cast<int64_t>(bytes)), MPI_BYTE, root, comm_),
              "MPI_Bcast");
    }
    void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
    std::unique_ptr<Collective> duplicate() override {
        if (thread_level_ < MPI_THREAD_MULTIPLE)
            throw Error(str("this MPI library gives thread support level ", thread_level_,
                            " of 3: a second lane of collectives needs MPI_THREAD_MULTIPLE (hint: "
                            "--overlap off, or an MPI built with thread support)"));
        MPI_Comm comm = MPI_COMM_NULL;
        check(MPI_Comm_dup(comm_, &comm), "MPI_Comm_dup");
        return std::unique_ptr<Collective>(new MpiWorld(comm, thread_level_));
    }
    [[noreturn]] void abort(const std::string& why) override {
        std::fprintf(stderr, "detrain: error: rank %d of %d: %s\n", rank_, size_, why.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::exit(1);
    }

 private:
    /// A lane of another world: the same processes over its own communicator `comm`.
    MpiWorld(MPI_Comm comm, int thread_level) : thread_level_(thread_level) { set_up(comm); }

    void set_up(MPI_Comm comm) {
        comm_ = comm;
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        MPI_Comm host = MPI_COMM_NULL;
        if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host) ==
            MPI_SUCCESS) {
            MPI_Comm_size(host, &host_processes_);
            MPI_Comm_free(&host);
        }
        // Packed exact accumulators and their sum (commutative: integer limbs).
        MPI_Type_contiguous(static_cast<int>(sizeof(PackedExactAcc) / sizeof(uint32_t)),
                            MPI_UINT32_T, &packed_type_);
        MPI_Type_commit(&packed_type_);
        MPI_Op_create(&packed_sum, /*commute=*/1, &packed_sum_);
        // Test-only: DT_TEST_FAULT="RANK:corrupt" or "RANK:truncate" spoils a block this rank
        // sends (spoil below), to test that the receivers find it.
        if (const char* f = std::getenv("DT_TEST_FAULT"); f != nullptr) {
            const std::string v(f);
            const std::size_t colon = v.find(':');
            if (colon != std::string::npos && std::atoi(v.substr(0, colon).c_str()) == rank_)
                fault_ = v.substr(colon + 1) == "truncate" ? 2 : 1;
        }
    }

    int count(int64_t n) {
        if (n > INT32_MAX) abort("a collective of more than 2^31 elements (split it)");
        return static_cast<int>(n);
    }
    void check(int err, const char* what) {
        if (err == MPI_SUCCESS) return;
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, text, &len);
        abort(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)) +
              " (another rank may have died; rerun the same command with --resume to continue)");
    }

    /// v's storage for at least n elements, kept across calls (a step exchanges the same sizes
    /// every time: no fresh pages to fault in).
    template <typename T>
    static T* grow(std::vector<T>& v, int64_t n) {
        if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
        return v.data();
    }

    /// The checksum of each block of `block` elements this rank sends (block c to rank c),
    /// exchanged so that each rank holds the P checksums of the blocks it receives, by sender.
    /// Without `own`, the block this rank keeps gets none (0): an MPI_Alltoall copies it in
    /// memory, no message carries it. A reduction's checks need it (the sum's is the parts').
    template <class T, class Check>
    const uint64_t* send_checks(const T* send, int64_t block, bool own, const Check& check_of) {
        uint64_t* out = grow(checks_out_, size_);
        uint64_t* in = grow(checks_in_, size_);
        for (int r = 0; r < size_; ++r)
            out[r] = own || r != rank_ ? check_of(send + r * block, block, block * r) : 0;
        check(MPI_Alltoall(out, 1, MPI_UINT64_T, in, 1, MPI_UINT64_T, comm_),
              "MPI_Alltoall (checksums)");
        return in;
    }

    /// MPI_Allgather of the blocks in place, each other rank's checked against its sender's
    /// checksum (this rank's own block did not travel).
    void gather_checked(float* all, int64_t block, const char* what) {
        gather_checked(all, block, what, word_check(all + block * rank_, block, block * rank_));
    }
    /// The same with this rank's block's checksum already taken.
    void gather_checked(float* all, int64_t block, const char* what, uint64_t mine) {
        uint64_t* sums = grow(checks_in_, size_);
        check(MPI_Allgather(&mine, 1, MPI_UINT64_T, sums, 1, MPI_UINT64_T, comm_),
              "MPI_Allgather (checksums)");
        check(
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, count(block), MPI_FLOAT, comm_),
            what);
        for (int r = 0; r < size_; ++r) {
            if (r != rank_)
                verify(word_check(all + block * r, block, block * r) == sums[r], r, what);
        }
    }

    /// Ends the job when a received block does not match its checksum (from rank `from`, or
    /// from the reduction of every rank's, -1): no sum made from it is used.
    void verify(bool ok, int from, const char* what) {
        if (ok) return;
        abort(std::string("the ") + what +
              (from >= 0 ? " from rank " + std::to_string(from) : std::string(" summed by MPI")) +
              " arrived corrupted or cut short (checksum mismatch); no result was used (check "
              "the network or the hosts' memory, then rerun with --resume)");
    }

    /// The test-only fault (DT_TEST_FAULT): the block this rank sends to the next rank gets a
    /// flipped bit, or for truncate loses its second half (zeros, as a message cut short), once,
    /// after its checksum was taken; a block it cannot change (all zeros) waits for the next.
    template <class T>
    void spoil(T* send, int64_t block) {
        if (fault_ == 0 || size_ == 1 || block == 0) return;
        unsigned char* b = reinterpret_cast<unsigned char*>(send + ((rank_ + 1) % size_) * block);
        const std::size_t bytes = static_cast<std::size_t>(block) * sizeof(T);
        if (fault_ == 1) {
            b[0] ^= 0x10u;
        } else {
            const std::size_t half = bytes / 2;
            if (std::all_of(b + half, b + bytes, [](unsigned char u) { return u == 0; })) return;
            std::fill(b + half, b + bytes, static_cast<unsigned char>(0));
        }
        fault_ = 0;
    }

    /// The MPI reduction of packed exact accumulators: inout = in + inout.
    static void packed_sum(void* in, void* inout, int* len, MPI_Datatype*) {
        exact_packed_merge(static_cast<const PackedExactAcc*>(in),
                           static_cast<PackedExactAcc*>(inout), *len);
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
    int thread_level_ = MPI_THREAD_SINGLE;
    int rank_ = 0, size_ = 1, host_processes_ = 1;
    MPI_Datatype packed_type_ = MPI_DATATYPE_NULL;
    MPI_Op packed_sum_ = MPI_OP_NULL;
    std::vector<PackedExactAcc> packed_, mine_;  // buffers of the exact exchanges
    std::vector<float> rounded_;
    std::vector<float> send_, parts_, combined_;  // buffers of the fixed-order float exchange
    static constexpr int64_t kWindow = 64;        // elements per window of the compact exchange
    std::vector<int32_t> meta_;                   // the windows: -lo, hi, special per block
    std::vector<int64_t> vals_, mine64_, wide_;   // compact values, their sums, wide elements
    std::vector<float> wide_rounded_;
    std::vector<uint64_t> checks_out_, checks_in_;  // checksums of the blocks sent, received
    std::vector<uint64_t> checks_got_;              // the checksums of the blocks that arrived
    int fault_ = 0;  // DT_TEST_FAULT on this rank: 1 corrupt, 2 truncate, 0 none (or spent)
    std::vector<int64_t> own_;     // values above their own least bit
    std::vector<int32_t> own_lo_;  // that bit
};

}  // namespace

Collective* mpi_world_if_launched() {
    if (!launched_by_mpirun()) return nullptr;
    return new MpiWorld;  // lives until exit (finalised by atexit)
}

}  // namespace dt
#endif
