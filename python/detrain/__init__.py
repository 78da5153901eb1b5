# SPDX-License-Identifier: MIT
"""detrain from Python: the deterministic training engine in-process, NumPy in and out.

    import detrain
    run = detrain.train(model="smallcnn", impl="exact", epochs=1, out="runs/x")
    print(run.test_accuracy, run.weights_sha256)

Keyword arguments are the command line's flags (docs/README): ``limit_train=2048`` is
``--limit-train 2048``, a switch such as ``no_shuffle=True`` is ``--no-shuffle``. The names,
defaults and checks are the command line's own, so a run started here has the weights_sha256
of the same run started with ``detrain train``. Runs happen in this process, one at a time.
"""
from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
from typing import Any, Callable

from . import _detrain
from ._weights import load_weights

__all__ = ["train", "study", "audit", "Run", "Study", "flags", "load_weights", "main",
           "UsageError", "NonFiniteError"]

def _detrain_executable() -> str:
    """The detrain program a study starts for its replicas: $DETRAIN_EXECUTABLE, the one in the
    package (pip install .), or the one beside a CMake build's python/ folder."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.environ.get("DETRAIN_EXECUTABLE", ""), os.path.join(here, "bin", "detrain"),
                 os.path.join(here, os.pardir, os.pardir, "detrain")):
        if path and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return ""


_detrain.set_executable(_detrain_executable())

UsageError = _detrain.UsageError
"""A refused argument (a ValueError): unknown name, bad value, conflicting flags."""
NonFiniteError = _detrain.NonFiniteError
"""Training stopped at a NaN or infinity (an ArithmeticError)."""


def flags(command: str = "train") -> list[dict[str, Any]]:
    """The flags of a command (train, study, audit, info, generate), in the command line's order.

    Each is a dict: ``name`` (as a keyword argument, e.g. ``limit_train``), ``flag``
    (``--limit-train``), ``default`` (text, "" where none), ``help``, ``takes_value`` and
    ``repeatable``.
    """
    return [{"name": n.replace("-", "_"), "flag": "--" + n, "default": d, "help": h,
             "takes_value": v, "repeatable": r}
            for n, d, h, v, r in _detrain.flags(command)]


def _argv(command: str, kwargs: dict[str, Any]) -> list[str]:
    """detrain COMMAND and the flags of kwargs: the command's own, then (study, audit) the
    train flags that it hands on."""
    table = {f["name"]: f for f in flags(command)}
    if command in ("study", "audit"):
        table = {**{f["name"]: f for f in flags("train")}, **table}
    argv = ["detrain", command]
    for key, value in kwargs.items():
        f = table.get(key)
        if f is None:
            raise UsageError(f"{command}: unknown argument {key!r} (allowed: "
                             f"{', '.join(sorted(table))})")
        if not f["takes_value"]:
            if not isinstance(value, bool):
                raise UsageError(f"{command}: {key} is a switch: pass True or False, not "
                                 f"{value!r}")
            if value:
                argv.append(f["flag"])
            continue
        values = value if isinstance(value, (list, tuple)) and f["repeatable"] else [value]
        for v in values:
            if isinstance(v, bool) or v is None:
                raise UsageError(f"{command}: {key} takes a value, not {v!r}")
            argv += [f["flag"], os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return argv


def _number(text: str) -> Any:
    """A CSV cell as int or float where it is one, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Run:
    """A finished training run: what its directory holds (result.json, weights.safetensors)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        """The run's directory (``--out``)."""
        self.finished = os.path.isfile(os.path.join(self.path, "result.json"))
        """False for a run stopped before its end: its checkpoint is in path, no results yet."""
        self.result: dict[str, Any] = {}
        """result.json as a dict (docs/formats.md); empty while the run is not finished."""
        if self.finished:
            with open(os.path.join(self.path, "result.json"), encoding="utf-8") as f:
                self.result = json.load(f)
        elif not os.path.isfile(os.path.join(self.path, "checkpoint.safetensors")):
            raise OSError(f"{self.path}: no result.json and no checkpoint.safetensors: not a "
                          "detrain run")
        self._weights: dict[str, Any] | None = None

    @property
    def history(self) -> list[dict[str, Any]]:
        """One dict per epoch: epoch, train_loss, test_accuracy, seconds, ..."""
        history: list[dict[str, Any]] = self.result["history"]
        return history

    @property
    def test_accuracy(self) -> float:
        """Fraction of test examples the final model classifies correctly."""
        return float(self.result["test_accuracy"])

    @property
    def weights_sha256(self) -> str:
        """SHA-256 of the trained weights in canonical order (docs/formats.md)."""
        return str(self.result["weights_sha256"])

    @property
    def config(self) -> dict[str, Any]:
        """Every flag in effect, keyed by the flag without "--" (e.g. "batch-size")."""
        config: dict[str, Any] = self.result["config"]
        return config

    @property
    def weights(self) -> dict[str, Any]:
        """The trained weights, {name: NumPy array}, read once from weights.safetensors."""
        if self._weights is None:
            self._weights = load_weights(os.path.join(self.path, "weights.safetensors"))
        return self._weights

    @property
    def predictions(self) -> Any:
        """The final model's predicted label of every test example (NumPy int64, data-set
        order), from predictions.csv; ``labels`` holds the true ones."""
        return self._predictions_csv()[1]

    @property
    def labels(self) -> Any:
        """The true label of every test example (NumPy int64), from predictions.csv."""
        return self._predictions_csv()[0]

    def _predictions_csv(self) -> Any:
        import numpy as np

        table = np.loadtxt(os.path.join(self.path, "predictions.csv"), delimiter=",",
                           skiprows=1, dtype=np.int64, ndmin=2)
        return table[:, 1], table[:, 2]

    def __repr__(self) -> str:
        if not self.finished:
            return f"Run({self.path!r}, not finished: resume with detrain.train(resume=path))"
        return (f"Run({self.path!r}, test_accuracy={self.test_accuracy:.4f}, "
                f"weights_sha256={self.weights_sha256[:12]}...)")


def _tqdm_bar(kwargs: dict[str, Any]) -> Any:
    """A tqdm bar over the run's steps when tqdm is installed and no progress mode was given."""
    if "progress" in kwargs:
        return None
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return None
    kwargs["progress"] = "none"
    return tqdm(unit="step", desc="detrain train")


def train(*, on_step: Callable[[dict[str, Any]], Any] | None = None,
          on_epoch: Callable[[dict[str, Any]], Any] | None = None, **kwargs: Any) -> Run:
    """Trains a model in this process, as ``detrain train`` with these flags, and returns the Run.

    ``on_step(event)`` runs after every training step with a dict (epoch, step, total_steps,
    mean_loss, images_per_second); a true return value stops the run there with a checkpoint.
    ``on_epoch(stats)`` runs after every epoch with that epoch's history entry. With tqdm
    installed and no ``progress`` given, a tqdm bar shows the steps.

    Ctrl-C (KeyboardInterrupt), or an exception from a callback, stops the run after the step
    in progress with a checkpoint in its directory, then is raised; ``train(resume=path)``
    continues it with the same bits. A run stopped by ``on_step`` returns its Run with
    ``finished`` False.

    Raises UsageError (a ValueError) naming a refused argument, OSError for a missing or bad
    file, NonFiniteError where training meets a NaN; nothing is written when an argument is
    refused. ``flags("train")`` lists the arguments.
    """
    bar = _tqdm_bar(kwargs)

    def step(event: dict[str, Any]) -> Any:
        if bar is not None:
            bar.total = event["total_steps"]
            bar.update(event["step"] - bar.n)
            bar.set_postfix(loss=f"{event['mean_loss']:.4f}", refresh=False)
        return on_step(event) if on_step is not None else False

    try:
        status, out = _detrain.run(_argv("train", kwargs), step, on_epoch)
    finally:
        if bar is not None:
            bar.close()
    if status != 0:
        raise RuntimeError(f"detrain train ended with status {status}")
    return Run(out)


class Study:
    """A finished study: what its directory holds (study.json, summary.csv, report.md, plots)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        """The study's directory (``--out``)."""
        with open(os.path.join(self.path, "study.json"), encoding="utf-8") as f:
            self.result: dict[str, Any] = json.load(f)
        """study.json as a dict (docs/study.md)."""
        with open(os.path.join(self.path, "summary.csv"), encoding="utf-8", newline="") as f:
            self.summary: list[dict[str, Any]] = [
                {k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
        """summary.csv: one dict per variant, numbers as int or float."""

    @property
    def report(self) -> str:
        """The path of report.md."""
        return os.path.join(self.path, "report.md")

    def to_pandas(self) -> Any:
        """The summary as a pandas DataFrame (pandas is an optional dependency)."""
        try:
            import pandas  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError:
            raise ImportError("Study.to_pandas needs pandas (pip install pandas); "
                              "Study.summary holds the same rows as dicts") from None
        return pandas.DataFrame(self.summary)

    def __repr__(self) -> str:
        return f"Study({self.path!r}, variants={[r.get('variant') for r in self.summary]})"


def study(**kwargs: Any) -> Study:
    """Runs ``detrain study`` in this process and returns the Study.

    Keywords are the study's flags (replicas, variants, out, ...) and the train flags it gives
    every replica (model, epochs, limit_train, ...). ``jobs`` above 1 trains replicas in
    child processes, as the command line does.
    """
    status, out = _detrain.run(_argv("study", kwargs))
    if status != 0:
        raise RuntimeError(f"detrain study ended with status {status}")
    return Study(out)


def audit(a: str | os.PathLike[str] | None = None, b: str | os.PathLike[str] | None = None,
          **kwargs: Any) -> dict[str, Any] | None:
    """Where two runs that should be identical part ways: the first difference, or None.

    ``audit(a, b)`` compares two trace files (``detrain train --trace``). Otherwise it trains
    run A with the train keywords and run B with ``vs`` (flags added, as one string) for
    ``steps`` steps, e.g. ``audit(model="smallcnn", limit_train=512, vs="--threads 1")``.
    The dict is audit --json's ``first_difference`` (docs/audit.md).
    """
    if (a is None) != (b is None):
        raise UsageError("audit: give two trace files (a and b), or neither")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "audit.json")
        args = dict(kwargs, json_out=out)
        argv = _argv("audit", args)
        if a is not None and b is not None:
            argv += ["--traces", os.fspath(a), os.fspath(b)]
        status, _ = _detrain.run(argv)
        if status != 0:
            raise RuntimeError(f"detrain audit ended with status {status}")
        with open(out, encoding="utf-8") as f:
            first: dict[str, Any] | None = json.load(f).get("first_difference")
    return first


def main(argv: list[str] | None = None) -> int:
    """The detrain command line in this process (``python -m detrain``); returns its status."""
    args = ["detrain", *(sys.argv[1:] if argv is None else argv)]
    try:
        status, _ = _detrain.run(args)
        return status
    except UsageError as e:
        print(f"detrain: error: {e}\nRun 'detrain --help' or 'detrain <subcommand> --help' for "
              "usage.", file=sys.stderr)
        return 2
    except (ValueError, OSError, ArithmeticError, RuntimeError) as e:
        print(f"detrain: error: {e}", file=sys.stderr)
        return 1
