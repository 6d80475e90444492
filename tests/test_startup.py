"""`--help` and `validate` must start fast: they import nothing heavy.

pulp, highspy, jinja2 and matplotlib are imported only by the stages that use them
(solve, render, report), so a CI job that only validates pays none of their start-up.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pulp", "highspy", "jinja2", "matplotlib", "numpy")


def imported_modules(*args: str) -> set[str]:
    code = ("import sys, runpy\n"
            f"sys.argv = ['infra-compile', *{list(args)!r}]\n"
            "try:\n    runpy.run_module('compiler', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    return {line.strip().split(".")[0] for line in r.stderr.splitlines() if line.strip()}


def test_help_imports_nothing_heavy():
    mods = imported_modules("--help")
    assert "compiler" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


def test_validate_imports_nothing_heavy():
    mods = imported_modules("validate", str(ROOT / "examples" / "llm-pretrain-aws.yaml"))
    assert "jsonschema" in mods, "validate did not run"
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
