# SPDX-License-Identifier: MIT
"""Types of the extension module detrain._detrain (python/src/module.cpp)."""

class UsageError(ValueError): ...
class NonFiniteError(ArithmeticError): ...

from typing import Any, Callable

def run(argv: list[str], on_step: Callable[[dict[str, Any]], Any] | None = None,
        on_epoch: Callable[[dict[str, Any]], Any] | None = None) -> tuple[int, str]:
    """Runs a detrain command line in-process: (exit status, run directory)."""

def set_executable(path: str) -> None:
    """The detrain executable that a study starts for its replicas."""

def flags(subcommand: str) -> list[tuple[str, str, str, bool, bool]]:
    """The flags of a subcommand: (name, default, help, takes_value, repeatable) each."""

class _Ops:
    def linear(self, x: Any, w: Any, b: Any | None = None) -> Any: ...
    def linear_backward(self, x: Any, w: Any, dy: Any, bias: bool, mode: str) -> tuple[Any, Any, Any]: ...
    def conv2d(self, x: Any, w: Any, b: Any | None, stride: int, padding: int) -> Any: ...
    def conv2d_backward(self, x: Any, w: Any, dy: Any, stride: int, padding: int, bias: bool,
                        mode: str) -> tuple[Any, Any, Any]: ...
    def softmax_cross_entropy(self, logits: Any, labels: Any, mode: str) -> tuple[float, Any]: ...

ops: _Ops
