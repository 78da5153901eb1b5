# SPDX-License-Identifier: MIT
"""detrain.torch: detrain's models in PyTorch, weights moved either way (skipped without
PyTorch: scripts/setup.sh --peers makes .venv-peers, which has it)."""
import gzip
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/setup.sh --peers)")

import detrain  # noqa: E402
import detrain.torch as dtorch  # noqa: E402

TINY = dict(epochs=1, limit_train=256, limit_test=64, batch_size=64, progress="none")


def fashion_test_images(run, n):
    path = os.path.join(run.result["dataset"]["dir"], "t10k-images-idx3-ubyte.gz")
    with gzip.open(path) as f:
        data = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
    return data[: n * 784].reshape(n, 1, 28, 28).astype(np.float32) / np.float32(255)


@pytest.mark.parametrize("model", ["smallcnn", "smallcnn-bn"])
def test_a_trained_run_in_torch_gives_detrains_logits(tmp_path, model):
    run = detrain.train(model=model, **TINY, out=tmp_path / "r")
    net = dtorch.from_run(run)
    x = torch.from_numpy(fashion_test_images(run, 64))
    with torch.no_grad():
        got = net(x).numpy()
    want = detrain.load_weights(os.path.join(run.path, "test_logits.safetensors"))["logits"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_weights_go_to_torch_and_back_bit_for_bit(tmp_path):
    run = detrain.train(model="smallcnn-bn", **TINY, out=tmp_path / "a")
    file = tmp_path / "back.safetensors"
    dtorch.save_weights(dtorch.from_run(run), file)
    back, mine = detrain.load_weights(file), run.weights
    assert list(back) == list(mine)
    assert all(np.array_equal(back[k], mine[k]) for k in mine)
    again = detrain.train(model="smallcnn-bn", **TINY, init_from=file, out=tmp_path / "b")
    direct = detrain.train(model="smallcnn-bn", **TINY, init_from=run.path + "/weights.safetensors",
                           out=tmp_path / "c")
    assert again.weights_sha256 == direct.weights_sha256


def test_a_torch_model_starts_a_detrain_run(tmp_path):
    for name, kw in (("mediumcnn", dict(dataset="cifar10")), ("resnet18", dict(dataset="cifar10")),
                     ("gpt", dict(layers=1, heads=2, width=16, context=16))):
        net = dtorch.build(name, **kw)
        assert all(not k.endswith("num_batches_tracked") for k in dtorch.state_dict_of(net))
    net = dtorch.build("smallcnn")
    file = tmp_path / "torch.safetensors"
    dtorch.save_weights(net, file)
    run = detrain.train(model="smallcnn", **TINY, init_from=file, out=tmp_path / "r")
    assert run.finished
    with pytest.raises(ValueError, match="does not fit"):
        dtorch.load_into(dtorch.build("smallcnn-bn"), file)
