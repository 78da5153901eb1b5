# SPDX-License-Identifier: MIT
"""safetensors files (docs/formats.md) as dicts of NumPy arrays."""
from __future__ import annotations

import json
import os
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64,
           "U8": np.uint8}


def load_weights(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Reads a safetensors file (weights.safetensors, a checkpoint) into {name: array}.

    The arrays are read-only views of one buffer holding the file (no copy per tensor), in the
    file's order. Raises OSError naming the file when it is missing or not a safetensors file.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:  # OSError names the path
        data = f.read()
    if len(data) < 8:
        raise OSError(f"{path}: not a safetensors file ({len(data)} bytes, no header)")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise OSError(f"{path}: header length {n} runs past the end of the file ({len(data)} "
                      "bytes)")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise OSError(f"{path}: the header is not JSON ({e})") from None
    body = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise OSError(f"{path}: tensor {name!r} has dtype {info.get('dtype')!r} (expected "
                          f"one of {', '.join(_DTYPES)})")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"])
    return out
