"""Golden output trees: a whole rendered tree compared with tests/golden/<case>/.

check_tree names every missing, extra and different file (with a unified diff) in one
failure. With update=True (pytest --update-golden) it rewrites the case's directory
instead, so a change to any rendered byte is a deliberate, reviewable diff.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"


def _read_tree(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file()}


def write_tree(root: Path, files: dict[str, str]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for rel, text in sorted(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")


def diff_trees(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    problems = []
    for rel in sorted(set(expected) - set(actual)):
        problems.append(f"missing: {rel} (in the golden tree, not rendered)")
    for rel in sorted(set(actual) - set(expected)):
        problems.append(f"extra: {rel} (rendered, not in the golden tree)")
    for rel in sorted(set(expected) & set(actual)):
        if expected[rel] != actual[rel]:
            diff = difflib.unified_diff(expected[rel].splitlines(keepends=True),
                                        actual[rel].splitlines(keepends=True),
                                        fromfile=f"golden/{rel}", tofile=f"rendered/{rel}")
            problems.append(f"different: {rel}\n" + "".join(diff))
    return problems


def check_tree(case: str, files: dict[str, str], update: bool = False,
               root: Path = GOLDEN) -> None:
    target = root / case
    if update:
        write_tree(target, files)
        return
    if not target.is_dir():
        pytest.fail(f"no golden tree tests/golden/{case}/; run pytest --update-golden")
    problems = diff_trees(_read_tree(target), files)
    if problems:
        pytest.fail(f"rendered tree differs from tests/golden/{case}/ "
                    f"(run pytest --update-golden if intended):\n" + "\n".join(problems),
                    pytrace=False)
