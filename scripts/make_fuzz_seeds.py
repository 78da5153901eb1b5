#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer targets (tests/fuzz): small valid inputs of each
parser, from which the fuzzer mutates. Usage: make_fuzz_seeds.py OUT_DIR (writes
OUT_DIR/<target>/<name>). The committed corpus, tests/fuzz/corpus, was made by this script;
scripts/fuzz.sh adds a real checkpoint written by detrain."""
import gzip
import json
import os
import struct
import sys


def idx_images(n, rows, cols):
    body = bytes((i * 37 + 11) % 256 for i in range(n * rows * cols))
    return struct.pack(">IIII", 0x803, n, rows, cols) + body


def idx_labels(labels):
    return struct.pack(">II", 0x801, len(labels)) + bytes(labels)


def cifar_records(labels, label_bytes):
    out = b""
    for i, lab in enumerate(labels):
        out += bytes(lab) if label_bytes > 1 else bytes([lab[0]])
        out += bytes((i * 13 + k) % 256 for k in range(3 * 32 * 32))
    return out


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, raw bytes)] -> file bytes (header padded to 8)."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def main():
    out = sys.argv[1]
    files = {
        "idx/images": idx_images(2, 28, 28),
        "idx/images-small": idx_images(3, 2, 2),
        "idx/labels": idx_labels([3, 9, 0]),
        "idx/images.gz": gzip.compress(idx_images(1, 4, 4), mtime=0),
        "cifar/cifar10-2": cifar_records([[1], [9]], 1),
        "cifar/cifar100-1": cifar_records([[4, 77]], 2),
        "safetensors/two": safetensors(
            [("conv1.weight", "F32", [2, 1, 1, 1], f32([0.5, -1.0])),
             ("n", "I64", [1], struct.pack("<q", 7))], {"format": "pt"}),
        "safetensors/empty": safetensors([], {"a": "b"}),
        "safetensors/i32": safetensors([("x", "I32", [2, 2], struct.pack("<4i", 1, 2, 3, 4))]),
        "checkpoint/minimal": safetensors(
            [("model.conv1.weight", "F32", [1], f32([0.25])),
             ("optim.step", "I64", [], struct.pack("<q", 3)),
             ("run.reduce_calls", "I64", [2], struct.pack("<2q", 5, 6))],
            {"format": "detrain-checkpoint", "format_version": "1", "detrain_version": "0.1.0",
             "config": json.dumps({"model": "smallcnn", "epochs": 2}),
             "noise": json.dumps({"impl": "deterministic"}), "epoch": "1", "batch": "2",
             "global_step": "8", "epoch_loss_sum": "0x1.8p+1", "epoch_images": "64",
             "epoch_train_seconds": "0x1p-3", "train_seconds_all": "0x1p+0",
             "train_images_all": "192",
             "history": json.dumps([{"epoch": 1, "train_loss": "0x1.2p+1",
                                     "test_accuracy": "0x1p-1", "seconds": 1.5,
                                     "train_seconds": 1.0, "images_per_second": 192.0}]),
             "checksum": "sha256:0"}),
    }
    for name, data in files.items():
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
