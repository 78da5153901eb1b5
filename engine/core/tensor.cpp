// SPDX-License-Identifier: MIT
#include "engine/core/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/autograd/tape.h"
#include "engine/core/backend.h"

namespace dt {

namespace {
std::string gib(std::size_t n) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f GiB", static_cast<double>(n) / double(1u << 30));
    return b;
}
}  // namespace

Storage::Storage(std::size_t n, Device dev) : bytes(n), device(dev) {
    const DeviceMemory& memory = device_memory(dev);
    data = memory.allocate(n);  // the host pool reuses blocks of freed tensors
    if (data == nullptr) {
        const std::string held =
            memory.peak_bytes != nullptr
                ? str("; detrain has held at most ", gib(memory.peak_bytes()), " there")
                : std::string();
        throw Error(str("out of memory allocating ", n, " bytes (", gib(n), ") on device ",
                        device_name(dev), held, " (", kOutOfMemoryHint, ")"));
    }
}

Storage::~Storage() { device_memory(device).release(data, bytes); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
    for (int64_t d : shape) {
        DT_CHECK_SHAPE(d >= 0, "negative extent in shape ", shape_str(shape));
    }
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->dtype = dtype;
    impl->storage = std::make_shared<Storage>(
        static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), device);
    return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    device_memory(device).zero(t.impl().storage->data, t.nbytes());
    return t;
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
    Tensor t = empty(shape, DType::kF32, device);
    t.fill(value);
    return t;
}

Tensor Tensor::from_vector(const Shape& shape, const std::vector<float>& values) {
    DT_CHECK_SHAPE(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ",
                   values.size(), " values for shape ", shape_str(shape));
    Tensor t = empty(shape);
    if (!values.empty()) std::memcpy(t.f32(), values.data(), values.size() * sizeof(float));
    return t;
}

Tensor Tensor::from_vector_i64(const Shape& shape, const std::vector<int64_t>& values) {
    DT_CHECK_SHAPE(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector_i64: ",
                   values.size(), " values for shape ", shape_str(shape));
    Tensor t = empty(shape, DType::kI64);
    if (!values.empty()) std::memcpy(t.data<int64_t>(), values.data(), values.size() * 8);
    return t;
}

int64_t Tensor::dim(int i) const {
    int n = ndim();
    int k = i < 0 ? i + n : i;
    DT_CHECK_SHAPE(k >= 0 && k < n, "dim(", i, ") out of range for shape ", shape_str(shape()));
    return shape()[static_cast<std::size_t>(k)];
}

std::string Tensor::str() const {
    if (!defined()) return "undefined";
    return dt::str(dtype_name(dtype()), shape_str(shape()), " ", device_name(device()));
}

float Tensor::item() const {
    DT_CHECK_SHAPE(numel() == 1, "item() needs a one-element tensor, got ", str());
    return values<float>()[0];
}

void Tensor::copy_to_host(void* dst) const {
    if (nbytes() == 0) return;  // no pointer to pass (a std::vector's data() may be null)
    device_memory(device()).to_host(dst, impl().storage->data, nbytes());
}

Tensor Tensor::clone() const {
    Tensor t = empty(shape(), dtype(), device());
    if (nbytes() > 0)
        device_memory(device()).copy(t.impl().storage->data, impl().storage->data, nbytes());
    return t;
}

Tensor Tensor::to(Device target) const {
    if (device() == target) return *this;
    Tensor t = empty(shape(), dtype(), target);
    t.copy_from(*this);
    return t;
}

void Tensor::move_to(Device target) {
    if (device() == target) return;
    impl().storage = to(target).impl().storage;
}

void Tensor::reset_storage(Device target) {
    impl().storage = std::make_shared<Storage>(nbytes(), target);
}

Tensor Tensor::view(const Shape& new_shape) const {
    DT_CHECK_SHAPE(shape_numel(new_shape) == numel(), "view: cannot view ", str(), " as ",
                   shape_str(new_shape), " (element counts differ)");
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = impl_->storage;
    impl->shape = new_shape;
    impl->dtype = impl_->dtype;
    return Tensor(std::move(impl));
}

void Tensor::copy_from(const Tensor& src) {
    DT_CHECK_SHAPE(src.shape() == shape() && src.dtype() == dtype(), "copy_from: source ",
                   src.str(), " does not match destination ", str());
    void* dst = impl().storage->data;
    const void* from = src.impl().storage->data;
    if (nbytes() == 0) return;
    if (src.device() == device()) {
        device_memory(device()).copy(dst, from, nbytes());
    } else if (device() == Device::kCpu) {
        src.copy_to_host(dst);
    } else if (src.device() == Device::kCpu) {
        device_memory(device()).from_host(dst, from, nbytes());
    } else {  // between two devices: through the host
        std::vector<std::byte> host(nbytes());
        src.copy_to_host(host.data());
        device_memory(device()).from_host(dst, host.data(), nbytes());
    }
}

void Tensor::fill(float value) {
    check_dtype(DType::kF32);
    if (device() == Device::kCpu) {
        float* p = f32();
        for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = value;
        return;
    }
    if (numel() == 0) return;
    const std::vector<float> host(static_cast<std::size_t>(numel()), value);
    device_memory(device()).from_host(impl().storage->data, host.data(), nbytes());
}

Tensor& Tensor::set_requires_grad(bool on) {
    DT_CHECK_T(DTypeError, !on || dtype() == DType::kF32,
               "only float32 tensors can require gradients, got ", str());
    impl().requires_grad = on;
    return *this;
}

void Tensor::backward() const { autograd::backward(*this); }

void Tensor::check_dtype(DType want) const {
    DT_CHECK_T(DTypeError, impl().dtype == want, "tensor ", str(), " accessed as ",
               dtype_name(want));
}

}  // namespace dt
