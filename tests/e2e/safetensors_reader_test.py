#!/usr/bin/env python3
"""weights.safetensors and checkpoint.safetensors read by an independent safetensors reader
(python3's struct, json and hashlib only; the format as published by Hugging Face): trains
SmallCNN for one epoch on a synthetic IDX set with a checkpoint after the last step, then
checks in both files the header, the offsets (tensors back to back, the data section covered
exactly), dtype sizes, shapes, that weights_sha256 is the SHA-256 of the weights' data section
(SmallCNN has no buffers), and that the checkpoint's model.* tensors equal the weights.
Usage: safetensors_reader_test.py DETRAIN_EXE (a ctest of the fast label)."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

SIZES = {"F32": 4, "I32": 4, "I64": 8, "F64": 8, "F16": 2, "BF16": 2, "U8": 1}


def read_safetensors(path):
    """-> (metadata, {name: (dtype, shape, bytes)}, data section). Raises on any violation."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), f"{path}: header length {n} beyond the file"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values()), "metadata values must be strings"
    spans, tensors = [], {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        assert end - begin == count * SIZES[t["dtype"]], f"{name}: size does not match its shape"
        spans.append((begin, end))
        tensors[name] = (t["dtype"], t["shape"], data[begin:end])
    spans.sort()
    pos = 0
    for begin, end in spans:
        assert begin == pos, f"{path}: gap or overlap at byte {begin} of the data section"
        pos = end
    assert pos == len(data), f"{path}: {len(data) - pos} bytes after the last tensor"
    return meta, tensors, data


def write_idx(d, prefix, n):
    with open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        f.write(bytes((i * 31 + 7) % 256 for i in range(n * 784)))
    with open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "data"), os.path.join(tmp, "run")
        os.makedirs(data)
        write_idx(data, "train", 64)
        write_idx(data, "t10k", 16)
        subprocess.run([exe, "train", "--data-dir", data, "--out", out, "--epochs", "1",
                        "--batch-size", "16", "--checkpoint-every", "4", "--progress", "none"],
                       check=True, stdout=subprocess.DEVNULL)
        meta, weights, section = read_safetensors(os.path.join(out, "weights.safetensors"))
        result = json.load(open(os.path.join(out, "result.json")))
        assert meta["weights_sha256"] == result["weights_sha256"]
        assert hashlib.sha256(section).hexdigest() == result["weights_sha256"], \
            "weights_sha256 is not the SHA-256 of the data section"
        assert all(t[0] == "F32" for t in weights.values())
        assert list(weights)[0] == "conv1.weight" and weights["conv1.weight"][1][1] == 1
        cmeta, ctensors, _ = read_safetensors(os.path.join(out, "checkpoint.safetensors"))
        assert cmeta["format"] == "detrain-checkpoint" and cmeta["global_step"] == "4"
        assert cmeta["checksum"].startswith("sha256:")
        json.loads(cmeta["config"]), json.loads(cmeta["noise"]), json.loads(cmeta["history"])
        for name, (dtype, shape, raw) in weights.items():
            assert ctensors["model." + name] == (dtype, shape, raw), f"model.{name} differs"
        assert ctensors["run.reduce_calls"][0] == "I64"
        assert any(n.startswith("optim.") for n in ctensors)
        print(f"ok: {len(weights)} weight tensors, {len(ctensors)} checkpoint tensors")


if __name__ == "__main__":
    main()
