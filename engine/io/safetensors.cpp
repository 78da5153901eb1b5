// SPDX-License-Identifier: MIT
// safetensors writer (atomic: temp file + fsync + rename) and a validating reader; the format is
// summarised in safetensors.h. The JSON header is built and parsed with nlohmann/json.
#include "engine/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace dt::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; detrain stores tensors in host order");

namespace {

using Json = nlohmann::ordered_json;
constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit

const char* st_dtype(DType t) {
    return t == DType::kF32 ? "F32" : t == DType::kI32 ? "I32" : t == DType::kI64 ? "I64" : "U8";
}

// ---- writer ----

/// The 8-byte length prefix and the space-padded JSON header; validates names and tensors.
std::string encode_header(const NamedTensors& tensors, const Metadata& metadata) {
    Json h = Json::object();
    if (!metadata.empty()) {
        Json m = Json::object();
        for (const auto& [k, v] : metadata) m[k] = v;
        h["__metadata__"] = std::move(m);
    }
    uint64_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto& [name, t] = tensors[i];
        DT_CHECK_VALUE(!name.empty() && name != "__metadata__", "save_safetensors: tensor ", i,
                       " has the invalid name '", name, "'");
        DT_CHECK_VALUE(!h.contains(name), "save_safetensors: tensor name '", name,
                       "' appears twice (hint: names must be unique)");
        DT_CHECK_VALUE(t.defined(), "save_safetensors: tensor '", name, "' is undefined");
        DT_CHECK_T(DeviceError, t.device() == Device::kCpu, "save_safetensors: tensor '", name,
                   "' is on ", device_name(t.device()), " (hint: copy it to the cpu first)");
        const uint64_t end = offset + t.nbytes();
        h[name] = Json{{"dtype", st_dtype(t.dtype())},
                       {"shape", t.shape()},
                       {"data_offsets", {offset, end}}};
        offset = end;
    }
    std::string text;
    try {
        text = h.dump();
    } catch (const nlohmann::json::exception& e) {
        throw ValueError(str("save_safetensors: cannot encode the header (", e.what(),
                             "; hint: names and metadata must be valid UTF-8)"));
    }
    text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N stays a multiple of 8
    const uint64_t n = text.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + text;
}

// ---- reader ----

[[noreturn]] void bad(const std::string& what, const std::string& fault) {
    throw IoError(str("safetensors file ", what, ": ", fault));
}

bool parse_dtype(const std::string& s, DType& out) {
    if (s == "F32") out = DType::kF32;
    else if (s == "I32") out = DType::kI32;
    else if (s == "I64") out = DType::kI64;
    else if (s == "U8") out = DType::kU8;
    else return false;
    return true;
}

uint64_t as_u64(const Json& v, const std::string& what, const std::string& field) {
    if (!v.is_number_unsigned()) {
        bad(what, str(field, " must be a non-negative integer, got ", v.dump()));
    }
    return v.get<uint64_t>();
}

struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
};

Entry parse_entry(const std::string& name, const Json& v, const std::string& what) {
    const std::string where = str("tensor '", name, "'");
    if (!v.is_object()) bad(what, str(where, ": entry must be an object, got ", v.dump()));
    for (const auto& [k, _] : v.items()) {
        if (k != "dtype" && k != "shape" && k != "data_offsets") {
            bad(what, str(where, ": unknown key '", k, "' (expected dtype, shape, data_offsets)"));
        }
    }
    if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
        bad(what, str(where, ": entry needs dtype, shape and data_offsets, got ", v.dump()));
    }
    Entry e{name, DType::kF32, {}, 0, 0};
    const Json& dt = v["dtype"];
    if (!dt.is_string() || !parse_dtype(dt.get<std::string>(), e.dtype)) {
        bad(what, str(where, ": unsupported dtype ", dt.dump(), " (supported: F32, I32, I64, U8)"));
    }
    const Json& sh = v["shape"];
    if (!sh.is_array()) bad(what, str(where, ": shape must be an array, got ", sh.dump()));
    uint64_t numel = 1;
    for (const Json& d : sh) {
        uint64_t x = as_u64(d, what, where + " shape entry");
        if (x > (uint64_t{1} << 62) || __builtin_mul_overflow(numel, x, &numel) ||
            numel > (uint64_t{1} << 60)) {
            bad(what, str(where, ": shape ", sh.dump(), " is too large"));
        }
        e.shape.push_back(static_cast<int64_t>(x));
    }
    const Json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2) {
        bad(what, str(where, ": data_offsets must be [begin, end], got ", off.dump()));
    }
    e.begin = as_u64(off[0], what, where + " data_offsets[0]");
    e.end = as_u64(off[1], what, where + " data_offsets[1]");
    if (e.end < e.begin) bad(what, str(where, ": data_offsets ", off.dump(), " end before begin"));
    const uint64_t need = numel * dtype_size(e.dtype);
    if (e.end - e.begin != need) {
        bad(what, str(where, ": data_offsets ", off.dump(), " span ", e.end - e.begin,
                      " bytes but shape ", shape_str(e.shape), " of ", dt.get<std::string>(),
                      " needs ", need));
    }
    return e;
}

/// Parses the header text; rejects duplicate keys in any object (nlohmann keeps one silently).
Json parse_header(const std::string& text, const std::string& what) {
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    auto callback = [&](int, Json::parse_event_t ev, Json& parsed) {
        if (ev == Json::parse_event_t::object_start) open_objects.emplace_back();
        if (ev == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
        if (ev == Json::parse_event_t::key && !open_objects.empty() && duplicate.empty() &&
            !open_objects.back().insert(parsed.get<std::string>()).second) {
            duplicate = parsed.get<std::string>();
        }
        return true;
    };
    Json h;
    try {
        h = Json::parse(text, callback);
    } catch (const nlohmann::json::exception& e) {
        bad(what, str("header is not valid JSON (", e.what(), ")"));
    }
    if (!duplicate.empty()) bad(what, str("header repeats the key '", duplicate, "'"));
    if (!h.is_object()) bad(what, "header must be a JSON object");
    return h;
}

}  // namespace

const Tensor* SafetensorsFile::find(const std::string& name) const {
    for (const auto& [n, t] : tensors) {
        if (n == name) return &t;
    }
    return nullptr;
}

// ---- writer ----

std::string encode_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
    std::string out = encode_header(tensors, metadata);
    for (const auto& [name, t] : tensors) {
        out.append(static_cast<const char*>(t.impl().storage->data), t.nbytes());
    }
    return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
    const std::string header = encode_header(tensors, metadata);
    std::vector<std::string_view> parts = {header};
    for (const auto& [name, t] : tensors) {
        parts.emplace_back(static_cast<const char*>(t.impl().storage->data), t.nbytes());
    }
    AtomicFileSet file;  // "<path>.tmp", fsync, rename: never a partial file at `path`
    file.add(path, parts);
    file.commit();
}

// ---- reader ----

SafetensorsFile decode_safetensors(const std::string& bytes, const std::string& what) {
    if (bytes.size() < 8) {
        bad(what, str("file is ", bytes.size(), " bytes, too short for the 8-byte header length"));
    }
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    if (n == 0 || n > kMaxHeader || n > bytes.size() - 8) {
        bad(what, str("header length ", n, " is invalid for a file of ", bytes.size(),
                      " bytes (must be in [1, min(", kMaxHeader, ", file size - 8)])"));
    }
    const Json h = parse_header(bytes.substr(8, n), what);
    const uint64_t data_size = bytes.size() - 8 - n;
    SafetensorsFile out;
    std::vector<Entry> entries;
    for (const auto& [key, v] : h.items()) {
        if (key == "__metadata__") {
            if (!v.is_object()) bad(what, "__metadata__ must be an object of strings");
            for (const auto& [mk, mv] : v.items()) {
                if (!mv.is_string()) {
                    bad(what, str("__metadata__ value of '", mk, "' is not a string: ", mv.dump()));
                }
                out.metadata[mk] = mv.get<std::string>();
            }
            continue;
        }
        entries.push_back(parse_entry(key, v, what));
    }
    // ORDER: tensors are returned by data offset (ties keep header order).
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
    uint64_t expected = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (e.end > data_size) {
            bad(what, str("tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
                          "] out of range (data section is ", data_size, " bytes)"));
        }
        if (e.begin < expected) {
            bad(what, str("tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
                          "] overlap tensor '", entries[i - 1].name, "'"));
        }
        if (e.begin > expected) {
            bad(what, str("gap of ", e.begin - expected, " bytes in the data section before "
                          "tensor '", e.name, "'"));
        }
        expected = e.end;
    }
    if (expected != data_size) {
        bad(what, str(data_size - expected, " trailing bytes after the last tensor (data section "
                      "is ", data_size, " bytes, tensors cover ", expected, ")"));
    }
    const char* data = bytes.data() + 8 + n;
    for (const Entry& e : entries) {
        Tensor t = Tensor::empty(e.shape, e.dtype);
        if (e.end > e.begin) std::memcpy(t.impl().storage->data, data + e.begin, e.end - e.begin);
        out.tensors.emplace_back(e.name, std::move(t));
    }
    return out;
}

SafetensorsFile load_safetensors(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
        throw IoError(str("safetensors file ", path, ": cannot open: ", std::strerror(errno)));
    }
    std::string bytes;
    char buf[1 << 16];
    std::size_t got;
    while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, got);
    const bool failed = std::ferror(f) != 0;
    const int e = errno;
    std::fclose(f);
    if (failed) throw IoError(str("safetensors file ", path, ": read error: ", std::strerror(e)));
    return decode_safetensors(bytes, path);
}

}  // namespace dt::io
