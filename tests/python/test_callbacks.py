# SPDX-License-Identifier: MIT
"""Callbacks, stopping, Ctrl-C and resume: a run stopped after any step continues with the bits
of an uninterrupted run."""
import os
import signal

import pytest

import detrain

RUN = dict(model="smallcnn", epochs=2, limit_train=256, limit_test=64, batch_size=64,
           progress="none")  # 4 steps an epoch


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    return detrain.train(**RUN, out=tmp_path_factory.mktemp("whole") / "run")


def test_callbacks_see_every_step_and_epoch(tmp_path, whole):
    steps, epochs = [], []
    run = detrain.train(**RUN, out=tmp_path / "r", on_step=steps.append, on_epoch=epochs.append)
    assert [e["step"] for e in steps] == list(range(1, 9))
    assert {e["total_steps"] for e in steps} == {8}
    assert [e["epoch"] for e in epochs] == [1, 2]
    assert epochs[-1]["test_accuracy"] == run.test_accuracy
    assert run.weights_sha256 == whole.weights_sha256


def test_a_callback_stops_the_run_and_resume_continues_it(tmp_path, whole):
    run = detrain.train(**RUN, out=tmp_path / "r", on_step=lambda e: e["step"] == 3)
    assert not run.finished
    assert os.path.isfile(tmp_path / "r" / "checkpoint.safetensors")
    done = detrain.train(resume=tmp_path / "r", progress="none")
    assert done.finished and done.weights_sha256 == whole.weights_sha256


def test_ctrl_c_checkpoints_then_raises(tmp_path, whole):
    def interrupt(event):
        if event["step"] == 5:  # a real SIGINT: Python's handler, seen after the next step
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        detrain.train(**RUN, out=tmp_path / "r", on_step=interrupt)
    assert not detrain.Run(tmp_path / "r").finished
    done = detrain.train(resume=tmp_path / "r", progress="none")
    assert done.weights_sha256 == whole.weights_sha256


def test_a_callbacks_exception_is_raised_after_the_checkpoint(tmp_path):
    def fail(event):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        detrain.train(**RUN, out=tmp_path / "r", on_step=fail)
    assert os.path.isfile(tmp_path / "r" / "checkpoint.safetensors")


def test_a_second_call_during_a_run_is_refused(tmp_path):
    def nested(event):
        detrain.train(**RUN, out=tmp_path / "inner")

    with pytest.raises(RuntimeError, match="one at a time"):
        detrain.train(**RUN, out=tmp_path / "outer", on_step=nested)
    assert not os.path.exists(tmp_path / "inner")
