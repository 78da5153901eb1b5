// SPDX-License-Identifier: MIT
// Element types (float32 for values, int32/int64 for labels and indices, uint8 for masks) and
// devices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace dt {

enum class DType { kF32, kI32, kI64, kU8 };
enum class Device { kCpu, kCuda };

constexpr std::size_t dtype_size(DType t) {
    return t == DType::kI64 ? 8 : t == DType::kU8 ? 1 : 4;
}
constexpr const char* dtype_name(DType t) {
    return t == DType::kF32   ? "float32"
           : t == DType::kI32 ? "int32"
           : t == DType::kI64 ? "int64"
                              : "uint8";
}
constexpr const char* device_name(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }
/// The device named "cpu" or "cuda" (callers validate the name first; others give cpu).
inline Device device_from_name(const std::string& name) {
    return name == "cuda" ? Device::kCuda : Device::kCpu;
}

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };

}  // namespace dt
