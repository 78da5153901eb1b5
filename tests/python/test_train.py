# SPDX-License-Identifier: MIT
"""detrain.train: the command line's flags and bits, its errors, and nothing written when an
argument is refused."""
import os
import subprocess
import sys

import numpy as np
import pytest

import detrain

SMALL = dict(model="smallcnn", epochs=1, limit_train=256, limit_test=64, batch_size=64)


def test_same_bits_as_the_command_line(tmp_path, detrain_bin):
    run = detrain.train(**SMALL, impl="exact", out=tmp_path / "py", progress="none")
    subprocess.run([detrain_bin, "train", "--model", "smallcnn", "--epochs", "1",
                    "--limit-train", "256", "--limit-test", "64", "--batch-size", "64",
                    "--impl", "exact", "--out", str(tmp_path / "cli"), "--progress", "none"],
                   check=True, capture_output=True)
    cli = detrain.Run(tmp_path / "cli")
    assert run.weights_sha256 == cli.weights_sha256
    assert len(run.history) == 1 and run.history[0]["epoch"] == 1
    assert 0.0 <= run.test_accuracy <= 1.0
    assert run.config["impl"] == "exact"
    assert run.path == str(tmp_path / "py")


def test_weights_are_the_files_arrays(tmp_path):
    run = detrain.train(**SMALL, out=tmp_path / "w", progress="none")
    w = run.weights
    assert list(w)[0] == "conv1.weight" and w["conv1.weight"].dtype == np.float32
    assert w is run.weights  # read once
    again = detrain.load_weights(tmp_path / "w" / "weights.safetensors")
    assert all(np.array_equal(w[k], again[k]) for k in w)


def test_a_switch_and_a_default_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = detrain.train(**SMALL, no_shuffle=True, progress="none")
    assert run.path == "runs/smallcnn-fashion-mnist"
    assert os.path.isfile(tmp_path / run.path / "result.json")
    assert run.result["seeds"]["shuffle"] == "off"


def test_an_unknown_argument_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="unknown argument 'learning_rate'.*lr"):
        detrain.train(learning_rate=0.1, out=tmp_path / "x")
    assert not os.path.exists(tmp_path / "x")


def test_a_bad_value_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="--model: got 'vgg'"):
        detrain.train(model="vgg", out=tmp_path / "x")
    with pytest.raises(ValueError, match="batch"):
        detrain.train(**{**SMALL, "batch_size": 0}, out=tmp_path / "y")
    with pytest.raises(detrain.UsageError, match="switch"):
        detrain.train(no_shuffle="yes", out=tmp_path / "z")
    assert not any(os.path.exists(tmp_path / d) for d in "xyz")


def test_a_missing_data_directory_is_an_oserror(tmp_path):
    with pytest.raises(OSError, match="nowhere"):
        detrain.train(**SMALL, data_dir=tmp_path / "nowhere", out=tmp_path / "x")


def test_flags_are_the_command_lines():
    names = {f["name"]: f for f in detrain.flags("train")}
    assert names["limit_train"]["flag"] == "--limit-train"
    assert names["no_shuffle"]["takes_value"] is False
    assert names["impl_site"]["repeatable"] is True
    assert names["batch_size"]["default"] == "128"
    with pytest.raises(ValueError, match="unknown subcommand"):
        detrain.flags("fly")


def test_python_dash_m_detrain_is_the_command_line():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "detrain", "train", "--help"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "--limit-train" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "detrain", "train", "--bogus"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--bogus" in bad.stderr


def test_runs_happen_in_this_process(tmp_path, monkeypatch):
    # No Python-level child, and no child of any kind that ran and was waited for: a child
    # detrain training for a while would add to this process's children's CPU time.
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setattr(os, "fork", lambda: started.append("fork"))
    before = os.times()
    detrain.train(**SMALL, out=tmp_path / "p", progress="none")
    after = os.times()
    assert started == []
    assert after.children_user + after.children_system == \
        before.children_user + before.children_system
    assert after.user > before.user  # the training's work was this process's


def test_init_from_a_weights_file(tmp_path):
    a = detrain.train(**SMALL, out=tmp_path / "a", progress="none")
    file = os.path.join(a.path, "weights.safetensors")
    b1 = detrain.train(**SMALL, init_from=file, seed_init=1, out=tmp_path / "b1", progress="none")
    b2 = detrain.train(**SMALL, init_from=file, seed_init=2, out=tmp_path / "b2", progress="none")
    assert b1.weights_sha256 == b2.weights_sha256 != a.weights_sha256
    with pytest.raises(OSError, match="bn1.weight"):
        detrain.train(**{**SMALL, "model": "smallcnn-bn"}, init_from=file, out=tmp_path / "c")
    assert not os.path.exists(tmp_path / "c")


def test_a_diverged_run_is_a_non_finite_error_naming_the_step(tmp_path):
    with pytest.raises(detrain.NonFiniteError, match="step") as e:
        detrain.train(**SMALL, lr=1e30, out=tmp_path / "nan", progress="none")
    assert isinstance(e.value, ArithmeticError)
