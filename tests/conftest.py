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


# The files whose tests take minutes, with their CPU seconds (each file alone, -n0, 2026-11-30;
# the examples' compiles counted in test_coherence.py, which asks for them first): the suite runs
# them first (pytest_collection_modifyitems), each whole on one worker (--dist loadfile, in this
# order: --no-loadscope-reorder), so the many short files fill in around them and both workers
# end together. xdist's own order (most tests first) left these few-test files for last, where
# one worker ran them alone while the other had nothing left. The files of 5-20 s follow, so the
# last files either worker starts take a second or two, not the 10 s of a few-test file with a
# slow test (xdist's order put test_recurring.py and test_ci_recipe.py among the last). Measure
# with `pytest --durations=60 -m slow` and keep the heaviest here.
HEAVY_FILES = {
    "test_canonical_plans.py": 495, "test_coherence.py": 230, "test_oracle_monotone.py": 85,
    "test_oracle_pins.py": 75, "test_small_specs.py": 70, "test_sweep.py": 55, "test_fuzz_pipeline.py": 50,
    "test_month_floors.py": 45, "test_optimize_engine.py": 45, "test_operability.py": 45, "test_cli.py": 40,
    "test_what_if.py": 35, "test_sweep_from_base.py": 35, "test_oracle_bruteforce.py": 35,
    "test_replan_stability.py": 30, "test_examples.py": 30, "test_benchmarks.py": 30, "test_baseline.py": 30,
    "test_estimate_calibration.py": 25, "test_optimize_start.py": 25,
    "test_hardening.py": 20, "test_render_terraform.py": 20, "test_optimality_cases.py": 15,
    "test_savings_plans.py": 15, "test_recurring.py": 14, "test_estate.py": 12, "test_render_catalog.py": 12,
    "test_render_slurm.py": 12, "test_ci_recipe.py": 12, "test_estimate_floors.py": 9,
    "test_fuzz_baseline.py": 8, "test_edge.py": 8, "test_runbook.py": 8, "test_install.py": 7,
    "test_price_freshness.py": 7, "test_edge_vision.py": 6, "test_solve_limits.py": 6,
    "test_after_horizon.py": 6, "test_replan_render.py": 6, "test_optimize_keys.py": 6,
    "test_report_layout.py": 5, "test_report.py": 5,
}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Each file's tests together and in their order; the files in HEAVY_FILES first, heaviest
    first, then the others by their number of tests (xdist's order), most first."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(files, key=lambda f: (-HEAVY_FILES.get(f.rsplit("/", 1)[-1], 0), -len(files[f])))
    items[:] = [item for f in order for item in files[f]]


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
