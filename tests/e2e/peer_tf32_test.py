#!/usr/bin/env python3
"""The PyTorch peer's TF32 switch (bench/peers/pytorch_train.py set_tf32) on stand-in
torch.backends: PyTorch >= 2.9 (fp32_precision on every level) gets only the new API, each level
set, since mixing it with allow_tf32 raises when a kernel reads the flag; older PyTorch
(Debian's 1.13) gets allow_tf32 on cuBLAS and cuDNN. Runs without torch: a stub module stands in.
usage: peer_tf32_test.py REPO_ROOT"""
import importlib.util
import os
import sys
import types

from expectations import Expectations


class Settings:
    """A torch.backends level that records which of its settings were written."""

    def __init__(self, names, **children):
        object.__setattr__(self, "written", {})
        for k, v in children.items():
            object.__setattr__(self, k, v)
        for n in names:
            object.__setattr__(self, n, "default")

    def __setattr__(self, name, value):
        self.written[name] = value
        object.__setattr__(self, name, value)


def backends(new_api):
    """torch.backends as PyTorch >= 2.9 (new_api) or 1.13 lays it out."""
    both = ["allow_tf32", "fp32_precision"] if new_api else ["allow_tf32"]
    leaf = ["fp32_precision"] if new_api else []
    return Settings(leaf, cuda=types.SimpleNamespace(matmul=Settings(both)),
                    cudnn=Settings(both, conv=Settings(leaf), rnn=Settings(leaf)))


def load_peer(root):
    """Imports the peer script with a stub torch (it needs only nn.Module at import time)."""
    torch = types.ModuleType("torch")
    torch.nn = types.ModuleType("torch.nn")
    torch.nn.Module = object
    torch.nn.functional = types.ModuleType("torch.nn.functional")
    sys.modules.update({"torch": torch, "torch.nn": torch.nn,
                        "torch.nn.functional": torch.nn.functional})
    path = os.path.join(root, "bench", "peers", "pytorch_train.py")
    spec = importlib.util.spec_from_file_location("pytorch_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def levels(b):
    return {"backends": b, "cuda.matmul": b.cuda.matmul, "cudnn": b.cudnn,
            "cudnn.conv": b.cudnn.conv, "cudnn.rnn": b.cudnn.rnn}


def main():
    expect = Expectations()
    peer = load_peer(sys.argv[1])
    for allowed, precision in ((True, "tf32"), (False, "ieee")):
        b = backends(new_api=True)
        api = peer.set_tf32(b, allowed)
        expect(api == "fp32_precision", f"new API: reported {api}")
        for name, level in levels(b).items():
            expect(level.written == {"fp32_precision": precision},
                   f"new API, tf32={allowed}: {name} written {level.written}, "
                   f"want only fp32_precision={precision}")
        b = backends(new_api=False)
        api = peer.set_tf32(b, allowed)
        expect(api == "allow_tf32", f"legacy API: reported {api}")
        for level in (b.cuda.matmul, b.cudnn):
            expect(level.written == {"allow_tf32": allowed},
                   f"legacy API, tf32={allowed}: written {level.written}")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
