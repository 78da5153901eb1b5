# SPDX-License-Identifier: MIT
"""detrain.study and detrain.audit: the command line's study and audit, in-process."""
import os
import subprocess

import pytest

import detrain

TINY = dict(model="smallcnn", epochs=1, limit_train=128, limit_test=64, batch_size=64)


def test_a_study_returns_its_summary(tmp_path):
    s = detrain.study(**TINY, replicas=2, variants="control,algo", out=tmp_path / "s",
                      progress="none")
    assert s.path == str(tmp_path / "s")
    rows = {r["variant"]: r for r in s.summary}
    assert set(rows) == {"control", "algo"}
    assert rows["control"]["replicas"] == 2 and isinstance(rows["algo"]["accuracy_mean"], float)
    assert rows["control"]["accuracy_stddev"] == 0.0  # fixed seeds, deterministic: one model
    assert os.path.isfile(s.report)
    assert s.result["replicas_per_variant"] == 2


def test_to_pandas_needs_pandas(tmp_path):
    s = detrain.study(**TINY, replicas=2, variants="control", out=tmp_path / "s",
                      progress="none")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            s.to_pandas()
    else:
        assert list(s.to_pandas()["variant"]) == ["control"]


def test_identical_runs_have_no_first_difference():
    assert detrain.audit(**TINY, steps=1, vs="--threads 1") is None


def test_a_planted_difference_is_found():
    first = detrain.audit(**TINY, steps=1, vs="--impl-site conv.wgrad=permuted:1")
    assert first is not None and first["step"] == 0
    assert "conv" in first["op"]


def test_two_traces(tmp_path, detrain_bin):
    for name, extra in (("a", []), ("b", ["--seed-init", "1"])):
        subprocess.run([detrain_bin, "train", "--model", "smallcnn", "--epochs", "1",
                        "--limit-train", "128", "--limit-test", "64", "--batch-size", "64",
                        "--out", str(tmp_path / name), "--progress", "none",
                        "--trace", str(tmp_path / f"{name}.trace"), *extra],
                       check=True, capture_output=True)
    first = detrain.audit(tmp_path / "a.trace", tmp_path / "b.trace")
    assert first is not None
    with pytest.raises(ValueError, match="two trace files"):
        detrain.audit(tmp_path / "a.trace")
