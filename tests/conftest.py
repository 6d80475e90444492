"""Shared pytest options and fixtures.

--update-golden rewrites the golden output trees under tests/golden/ from what the
compiler renders now; without it, any difference fails the test (see tests/golden.py).
"""

from __future__ import annotations

import os
import signal

import pytest

# Prices' age (compiler/catalog/freshness.py) is counted to this date in every test and every
# compile a test starts (xdist workers and subprocesses inherit it): a stale-price warning
# appears when the catalog's figures age, not when the calendar moves. 2026-11-28 00:00 UTC.
os.environ["SOURCE_DATE_EPOCH"] = "1795824000"


def pytest_configure(config):
    # A run started in the background of a non-interactive shell (`pytest &` in a script) inherits
    # SIGINT ignored, and Python then installs no handler for it. The Ctrl-C tests send SIGINT to
    # this process and to a compile it starts: give both Python's own handler (a handled signal is
    # reset to the default on exec, so the child installs its handler too).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/<case>/ from the current output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def golden(update_golden):
    """golden(case, files): compare a rendered tree with tests/golden/<case>/ (or rewrite it)."""
    from golden import check_tree

    def check(case: str, files: dict[str, str]) -> None:
        check_tree(case, files, update=update_golden)
    return check
