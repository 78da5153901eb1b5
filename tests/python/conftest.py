# SPDX-License-Identifier: MIT
"""The detrain package of a CMake build with -DDT_PYTHON=ON (DETRAIN_BUILD, default build/):
its python/ folder holds the package beside the module. The detrain binary of the same build
gives the command line's results to compare with."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DETRAIN_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))


@pytest.fixture
def detrain_bin():
    path = os.path.join(BUILD, "detrain")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no detrain binary in {BUILD}")
    return path
