"""Shared pytest options and fixtures.

--update-golden rewrites the golden output trees under tests/golden/ from what the
compiler renders now; without it, any difference fails the test (see tests/golden.py).
"""

from __future__ import annotations

import pytest


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
