// SPDX-License-Identifier: MIT
// dt::flatten / dt::reshape: views of the same buffer (Tensor::view) with an autograd record whose
// backward views dy back to the input's shape. Nothing is saved but the shape.
#include "engine/ops/shape_ops.h"

#include "engine/autograd/tape.h"
#include "engine/core/backend.h"

namespace dt {

namespace {

Tensor reshaped(const Tensor& x, const Shape& shape, const char* op) {
    Tensor y = x.view(shape);
    if (x.dtype() == DType::kF32 && autograd::needs_grad({x})) {
        Shape in_shape = x.shape();
        autograd::record(y, op, {x}, [in_shape](const Tensor& dy) {
            return std::vector<Tensor>{dy.view(in_shape)};
        });
    }
    return y;
}

}  // namespace

Tensor flatten(const Tensor& x) {
    DT_CHECK(x.defined(), "flatten: input is undefined");
    DT_CHECK_SHAPE(x.ndim() >= 2, "flatten: input ", x.str(),
                   " needs at least 2 dimensions "
                   "(hint: flatten keeps dimension 0 and merges the rest)");
    const int64_t N = x.dim(0);
    return reshaped(x, {N, N == 0 ? 0 : x.numel() / N}, "flatten");
}

Tensor reshape(const Tensor& x, const Shape& shape) {
    DT_CHECK(x.defined(), "reshape: input is undefined");
    Shape target = shape;
    int64_t known = 1, infer = -1;
    for (std::size_t i = 0; i < target.size(); ++i) {
        if (target[i] == -1) {
            DT_CHECK_SHAPE(infer < 0, "reshape: more than one -1 in ", shape_str(shape));
            infer = static_cast<int64_t>(i);
        } else {
            DT_CHECK_SHAPE(target[i] >= 0, "reshape: negative extent in ", shape_str(shape));
            known *= target[i];
        }
    }
    if (infer >= 0) {
        DT_CHECK_SHAPE(known > 0 && x.numel() % known == 0, "reshape: cannot infer the -1 in ",
                       shape_str(shape), " for ", x.str());
        target[static_cast<std::size_t>(infer)] = x.numel() / known;
    }
    DT_CHECK_SHAPE(shape_numel(target) == x.numel(), "reshape: cannot reshape ", x.str(), " to ",
                   shape_str(shape), " (", x.numel(), " vs ", shape_numel(target), " elements)");
    return reshaped(x, target, "reshape");
}

void write_rows(Tensor& dst, int64_t row, const Tensor& src) {
    DT_CHECK(dst.defined() && src.defined(), "write_rows: a tensor is undefined");
    DT_CHECK_SHAPE(dst.ndim() >= 1 && src.ndim() == dst.ndim() && src.dtype() == dst.dtype() &&
                       src.device() == dst.device(),
                   "write_rows: src ", src.str(), " does not fit the rows of dst ", dst.str());
    for (int i = 1; i < dst.ndim(); ++i)
        DT_CHECK_SHAPE(src.dim(i) == dst.dim(i), "write_rows: src ", src.str(), " and dst ",
                       dst.str(), " differ in dimension ", i);
    DT_CHECK_VALUE(row >= 0 && row + src.dim(0) <= dst.dim(0), "write_rows: rows ", row, " .. ",
                   row + src.dim(0), " are outside the ", dst.dim(0), " rows of dst ", dst.str());
    if (src.numel() == 0) return;
    const std::size_t row_bytes = dst.nbytes() / static_cast<std::size_t>(dst.dim(0));
    char* base = static_cast<char*>(dst.impl().storage->data);
    device_memory(dst.device())
        .copy(base + static_cast<std::size_t>(row) * row_bytes, src.impl().storage->data,
              src.nbytes());
}

}  // namespace dt
