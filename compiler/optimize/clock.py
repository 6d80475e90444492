"""The user's time limit (--time-limit) as the searches share it out."""

from __future__ import annotations

import time
from typing import Callable


def time_left(seconds: float | None) -> Callable[[], float | None]:
    """A clock for a limit of `seconds` from now: each call returns the seconds left, never below
    0, or None where there is no limit. A search hands it to its solves as their time limit and
    stops once it reads 0."""
    if seconds is None:
        return lambda: None
    deadline = time.perf_counter() + seconds
    return lambda: max(0.0, deadline - time.perf_counter())
