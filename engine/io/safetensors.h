// SPDX-License-Identifier: MIT
// The safetensors file format (https://github.com/huggingface/safetensors), as detrain writes and
// reads it for model weights and checkpoints:
//   [8 bytes]  N, little-endian uint64: length of the JSON header
//   [N bytes]  JSON object {"__metadata__": {str: str}, "<name>": {"dtype": "F32"|"I32"|"I64"|
//              "U8", "shape": [d0, ...], "data_offsets": [begin, end]}, ...}, padded with
//              spaces so that 8 + N is a multiple of 8
//   [rest]     raw little-endian tensor data; offsets are relative to the start of this section.
// The writer stores tensors back to back in the order given (header keys in the same order,
// "__metadata__" first and only when non-empty). The reader accepts any key order, requires the
// data section to be covered exactly (no gaps, overlaps or trailing bytes, as the reference
// implementation does) and returns tensors in data order, i.e. the writer's order.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace dt::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
    NamedTensors tensors;  // in data-section order
    Metadata metadata;
    /// The tensor called `name`, or nullptr.
    const Tensor* find(const std::string& name) const;
};

/// Writes `tensors` (CPU, float32/int32/int64/uint8, unique non-empty names other than
/// "__metadata__") and `metadata` to `path` atomically (io::AtomicFileSet, atomic_file.h: the
/// bytes go to "<path>.tmp", fsync, rename over `path`). Throws dt::IoError naming the path and
/// the errno text on any I/O failure (the temporary file is removed), dt::ValueError for invalid
/// names or tensors.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

/// Reads and validates a whole file. Throws dt::IoError naming the file and the fault (short
/// file, header length vs file size, JSON syntax, unknown dtype or key, bad shape, offsets out of
/// range / overlapping / leaving gaps / not matching shape x dtype size, duplicate names).
SafetensorsFile load_safetensors(const std::string& path);

/// The bytes save_safetensors would write (for tests and in-memory use).
std::string encode_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});

/// Parses file contents held in memory; `what` names the source in error messages.
SafetensorsFile decode_safetensors(const std::string& bytes, const std::string& what);

}  // namespace dt::io
