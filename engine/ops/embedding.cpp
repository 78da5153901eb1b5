// SPDX-License-Identifier: MIT
// dt::embedding: validation (ids int64 in [0, V), checked on the host, then on the table's
// device), the autograd record and the kernels of kernels/embedding.h through the device's kernel
// table. Saved for backward: the ids on the table's device, the sizes and the table (the key of
// a split batch's accumulators). Backward: dtable via the embed.grad site; the ids get no
// gradient.
#include "engine/ops/embedding.h"

#include <limits>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

namespace {

Tensor embedding_grad(const Tensor& ids, const Tensor& dy, const Tensor& table,
                      kernels::EmbeddingParams p) {
    p.accum = accum_spec_for_call(ReduceSite::kEmbedGrad);             // one spec per call
    p.exact_out = split_exact_grad(table, p.accum, ExactUse::kTable);  // a tied head's table
    if (p.exact_out != nullptr) {  // a part of a split batch: unrounded sums, no float gradient
        device_kernels(dy.device()).embedding_backward(ids.data<int64_t>(), dy.f32(), nullptr, p);
        return Tensor();
    }
    Tensor dtable = ops_detail::empty_like_device({p.V, p.C}, dy);
    const kernels::KernelTable& k = device_kernels(dy.device());
    k.embedding_backward(ids.data<int64_t>(), dy.f32(), dtable.f32(), p);
    ops_detail::probe_rerun(dy, ReduceSite::kEmbedGrad, p.V * p.C, p,
                            [&](const kernels::EmbeddingParams& r, float* out) {
                                k.embedding_backward(ids.data<int64_t>(), dy.f32(), out, r);
                            });
    return dtable;
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& table, int64_t seq_len) {
    DT_CHECK(ids.defined(), "embedding: ids are undefined");
    DT_CHECK_T(DTypeError, ids.dtype() == DType::kI64, "embedding: ids must be int64, got ",
               ids.str());
    ops_detail::check_f32(table, "embedding", "table", 2);
    const int64_t V = table.dim(0), C = table.dim(1), M = ids.numel();
    DT_CHECK_VALUE(seq_len >= 1, "embedding: seq_len is ", seq_len,
                   " (hint: the positions per sequence, at least 1)");
    DT_CHECK_SHAPE(M % seq_len == 0, "embedding: ids ", ids.str(), " hold ", M,
                   " rows, not whole sequences of seq_len = ", seq_len, " (hint: ids.numel() ",
                   "must be a multiple of seq_len; tokens of shape [B, T] take seq_len = T)");
    DT_CHECK_SHAPE(M <= std::numeric_limits<int32_t>::max(), "embedding: ids ", ids.str(),
                   " hold more than 2^31 - 1 rows (the GPU's sort indexes rows with int32)");
    const std::vector<int64_t> host_ids = ids.values<int64_t>();
    for (std::size_t m = 0; m < host_ids.size(); ++m) {
        DT_CHECK_VALUE(host_ids[m] >= 0 && host_ids[m] < V, "embedding: ids[", m,
                       "] = ", host_ids[m], " is outside [0, ", V, ") (hint: table ", table.str(),
                       " has ", V, " rows, one per id)");
    }
    const kernels::EmbeddingParams p{.V = V, .C = C, .M = M, .T = seq_len};
    const Tensor ids_dev = ids.to(table.device());
    Shape shape = ids.shape();
    shape.push_back(C);
    Tensor y = ops_detail::empty_like_device(shape, table);
    device_kernels(table.device())
        .embedding_forward(ids_dev.data<int64_t>(), table.f32(), y.f32(), p);
    if (autograd::needs_grad({table})) {
        autograd::record(y, "embedding", {table}, [ids_dev, table, p](const Tensor& dy) {
            return std::vector<Tensor>{embedding_grad(ids_dev, dy, table, p)};
        });
    }
    return y;
}

}  // namespace dt
