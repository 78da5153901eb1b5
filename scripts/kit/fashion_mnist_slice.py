#!/usr/bin/env python3
"""The GPU kit's Fashion-MNIST slice: the first 2048 training and 1000 test images of SRC (IDX,
plain or .gz) written to DST as uncompressed IDX. scripts/gpu_kit.sh packs it into the kit;
scripts/emulate.sh gives it to the GPU check it runs on the emulated GPU (the same runs, then).
  scripts/kit/fashion_mnist_slice.py SRC DST"""
import gzip
import os
import struct
import sys

SPLITS = (("train", 2048), ("t10k", 1000))  # the CPU-vs-GPU runs: 16 steps of 128, one epoch


def read(src, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(src, name)
        if os.path.exists(p):
            with (gzip.open if name.endswith(".gz") else open)(p, "rb") as f:
                return f.read()
    sys.exit(f"fashion_mnist_slice.py: {stem}(.gz) not found in {src} "
             "(run scripts/setup.sh, or set DT_FASHION_MNIST)")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    src, dst = argv[1], argv[2]
    os.makedirs(dst, exist_ok=True)
    for split, keep in SPLITS:
        img, lab = read(src, f"{split}-images-idx3-ubyte"), read(src, f"{split}-labels-idx1-ubyte")
        _, n, r, c = struct.unpack(">IIII", img[:16])
        if n < keep:
            sys.exit(f"fashion_mnist_slice.py: {src}'s {split} set has {n} images, {keep} wanted")
        with open(os.path.join(dst, f"{split}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, keep, r, c) + img[16:16 + keep * r * c])
        with open(os.path.join(dst, f"{split}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, keep) + lab[8:8 + keep])


if __name__ == "__main__":
    main(sys.argv)
