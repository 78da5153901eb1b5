// SPDX-License-Identifier: MIT
// dt::Tensor: a shared handle to a contiguous, row-major, 64-byte aligned buffer with a shape, an
// element type and a device. Copies of a Tensor share the buffer (like std::shared_ptr);
// clone() copies the data. Memory comes from the device's DeviceMemory (engine/core/backend.h);
// data<T>() is the device's own pointer (for kernels), to_vector()/values<T>()/item() copy to the
// host. Autograd state (requires_grad, the accumulated .grad() of a leaf, the
// producing tape node of a non-leaf) lives in the shared TensorImpl; see engine/autograd/tape.h.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/shape.h"

namespace dt {

namespace autograd { struct Node; }

/// An owned, aligned byte buffer on one device (allocated through device_memory(device)).
struct Storage {
    Storage(std::size_t bytes, Device device);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    void* data = nullptr;
    std::size_t bytes = 0;
    Device device = Device::kCpu;
};

struct TensorImpl {
    std::shared_ptr<Storage> storage;
    Shape shape;
    DType dtype = DType::kF32;
    bool requires_grad = false;
    std::shared_ptr<TensorImpl> grad;           // leaves: accumulated gradient (may be null)
    std::shared_ptr<autograd::Node> grad_fn;    // non-leaves: the tape node that produced it
};

class Tensor {
 public:
    Tensor() = default;  // undefined tensor (defined() == false)
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    // ---- factories ----
    /// Uninitialised contents.
    static Tensor empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::kCpu);
    static Tensor zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::kCpu);
    static Tensor full(const Shape& shape, float value, Device device = Device::kCpu);
    /// Copies `values` to a CPU tensor (size must equal the shape's element count).
    static Tensor from_vector(const Shape& shape, const std::vector<float>& values);
    static Tensor from_vector_i64(const Shape& shape, const std::vector<int64_t>& values);

    // ---- metadata ----
    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const { return impl().shape; }
    int64_t dim(int i) const;  // negative i counts from the back
    int ndim() const { return static_cast<int>(impl().shape.size()); }
    int64_t numel() const { return shape_numel(impl().shape); }
    DType dtype() const { return impl().dtype; }
    Device device() const { return impl().storage->device; }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype()); }
    std::string str() const;  // "float32[2, 3] cpu" for messages

    // ---- data access (the device's pointer; checked dtype) ----
    template <typename T> T* data() {
        check_dtype(DTypeOf<T>::value);
        return static_cast<T*>(impl().storage->data);
    }
    template <typename T> const T* data() const {
        check_dtype(DTypeOf<T>::value);
        return static_cast<const T*>(impl().storage->data);
    }
    float* f32() { return data<float>(); }
    const float* f32() const { return data<float>(); }
    /// The elements, copied to the host (any device; checked dtype).
    template <typename T> std::vector<T> values() const {
        check_dtype(DTypeOf<T>::value);
        std::vector<T> out(static_cast<std::size_t>(numel()));
        copy_to_host(out.data());
        return out;
    }
    std::vector<float> to_vector() const { return values<float>(); }
    float item() const;  // one-element float32 tensor, copied to the host

    // ---- copies and views ----
    Tensor clone() const;  // deep copy of data on the same device; no autograd history
    Tensor to(Device device) const;  // a copy on `device` (this tensor itself when already there)
    /// Moves the data to `device` in place: every copy of this tensor (they share one impl)
    /// follows; views made earlier keep the old buffer. For parameters held by layers.
    void move_to(Device device);
    /// Gives this tensor (every copy: they share one impl) fresh storage of its size on
    /// `device`, its contents unset: what it held is dropped, not copied. For parameters about to
    /// be written in full (a model's initialisation).
    void reset_storage(Device device);
    /// Same buffer, new shape (element counts must match). No autograd history: for ops and
    /// kernels. Differentiable reshaping is dt::flatten / dt::reshape in engine/ops.
    Tensor view(const Shape& shape) const;
    void copy_from(const Tensor& src);  // same shape and dtype, any devices
    void fill(float value);             // float32

    // ---- autograd ----
    bool requires_grad() const { return impl().requires_grad; }
    Tensor& set_requires_grad(bool on);
    /// Gradient accumulated into this leaf by backward() (undefined before the first).
    Tensor grad() const { return Tensor(impl().grad); }
    void set_grad(const Tensor& g) { impl().grad = g.impl_; }
    void zero_grad() { impl().grad.reset(); }
    bool is_leaf() const { return impl().grad_fn == nullptr; }
    /// Reverse-mode pass from this scalar (see autograd/tape.h for the order).
    void backward() const;

    TensorImpl& impl() const {
        DT_CHECK(impl_ != nullptr, "use of an undefined tensor",
                 " (hint: a default-constructed Tensor or a gradient that was never computed)");
        return *impl_;
    }
    const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
    bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
    void check_dtype(DType want) const;
    void copy_to_host(void* dst) const;  // nbytes() bytes
    std::shared_ptr<TensorImpl> impl_;
};

}  // namespace dt
