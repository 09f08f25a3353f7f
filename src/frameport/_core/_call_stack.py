"""Where the user's code is on the call stack, for warnings and `@variable` lookups."""

from __future__ import annotations

import os
import sys

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_frame_depth() -> int:
    """How many frames above its caller the first frame outside frameport is (0: the caller
    is user code). ``warnings.warn(..., stacklevel=1 + user_frame_depth())`` names the user's
    line, whether it called a synchronous or an async method."""
    depth, frame = 0, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        depth, frame = depth + 1, frame.f_back
    return depth
