# SPDX-License-Identifier: MIT
"""python -m detrain: the detrain command line, in-process."""
import sys

from detrain import main

sys.exit(main())
