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
    # xdist names each run for its workers (PYTEST_XDIST_TESTRUNUID); choosing the name here lets
    # the controller remove what the workers shared under it (pytest_sessionfinish).
    if not hasattr(config, "workerinput") and hasattr(config.option, "testrunuid") and not config.option.testrunuid:
        import uuid

        config.option.testrunuid = uuid.uuid4().hex


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # before the test's fixtures: a module fixture that compiles a heavy example is refused too
    import examples_cache

    examples_cache.IN_FAST_TEST[0] = item.get_closest_marker("slow") is None


def pytest_sessionfinish(session):
    # The controller of an xdist run removes the folder its workers shared the examples'
    # compiles in (examples_cache.example), named by the run's id it chose in pytest_configure.
    uid = getattr(session.config.option, "testrunuid", None)
    if uid and not hasattr(session.config, "workerinput"):
        import shutil

        from examples_cache import shared_folder
        shutil.rmtree(shared_folder(uid), ignore_errors=True)


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
