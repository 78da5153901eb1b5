// SPDX-License-Identifier: MIT
// Errors at detrain's API boundaries. DT_CHECK(cond, parts...) throws dt::Error (or a subtype via
// DT_CHECK_T) whose text is the message parts, which should carry the actual values and a hint:
// "matmul: inner dims differ: a is [32, 64], b is [65, 10]". A user's error (ValueError: a value
// or flag; IoError: a file; DeviceError: a device) says only that: what and how to fix it. An
// internal invariant (Error, ShapeError, DTypeError) also names the failed condition and its
// file:line, for the developer who broke it.
// Kernels and kernels/common never throw; they are called only with validated arguments.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace dt {

class Error : public std::runtime_error {
 public:
    using std::runtime_error::runtime_error;
};
class ShapeError : public Error { using Error::Error; };
class DTypeError : public Error { using Error::Error; };
class DeviceError : public Error { using Error::Error; };
class IoError : public Error { using Error::Error; };
class ValueError : public Error { using Error::Error; };

/// The hint of every out-of-memory error (a tensor's storage, a kernel's scratch buffer).
inline constexpr const char* kOutOfMemoryHint =
    "hint: a smaller --batch-size or --eval-batch-size, --micro-batch to split each training "
    "batch, or a smaller model";

/// Concatenates the stream representations of `parts` (the message builder of DT_CHECK).
template <typename... Parts>
std::string str(const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}

namespace detail {
template <typename E>
[[noreturn]] void fail(const char* file, int line, const char* cond, const std::string& msg) {
    if constexpr (std::is_base_of_v<ValueError, E> || std::is_base_of_v<IoError, E> ||
                  std::is_base_of_v<DeviceError, E>) {
        throw E(msg);  // a user's error: no source location
    } else {
        throw E(str(msg, " [", cond, " failed at ", file, ":", line, "]"));
    }
}
}  // namespace detail

}  // namespace dt

#define DT_CHECK_T(ErrorType, cond, ...)                                                     \
    do {                                                                                     \
        if (!(cond)) ::dt::detail::fail<ErrorType>(__FILE__, __LINE__, #cond,                \
                                                   ::dt::str(__VA_ARGS__));                  \
    } while (0)
#define DT_CHECK(cond, ...) DT_CHECK_T(::dt::Error, cond, __VA_ARGS__)
#define DT_CHECK_SHAPE(cond, ...) DT_CHECK_T(::dt::ShapeError, cond, __VA_ARGS__)
#define DT_CHECK_VALUE(cond, ...) DT_CHECK_T(::dt::ValueError, cond, __VA_ARGS__)
#define DT_CHECK_IO(cond, ...) DT_CHECK_T(::dt::IoError, cond, __VA_ARGS__)
