"""A plan's cost is the same float on every machine.

numpy hands a dot product to OpenBLAS, which picks its kernel by the CPU it runs on (and
OPENBLAS_CORETYPE, which lets one machine stand in for another): kernels of other vector widths
sum in another order and differ in the last bits. Where the search compares a plan's cost with
another's, such a bit decided its path: the multi-region example reached another plan, of another
cost, on one machine than on the one its golden tree was made on. The oracle here is the bits of
the same solve under two kernels, in two processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_SOLVE = """
import sys
sys.path.insert(0, {bench!r})
import numpy
from generate import generate
from compiler.optimize.formulate import formulate
from compiler.optimize.solve import HighsModel
model = HighsModel(formulate(generate(20, 1, horizon=6)))
lp = model.solve(relax=True)
print(float.hex(lp.objective))
"""


def _blas_sums_differ(kernels) -> bool:
    """Whether these OpenBLAS kernels give another float for one dot product on this machine."""
    probe = ("import numpy as np; r = np.random.default_rng(0); a = r.random(5000) * 1e4; "
             "b = np.round(r.random(5000) * 8); print(float.hex(float(a @ b)))")
    outs = {subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env={**os.environ, "OPENBLAS_CORETYPE": k}).stdout for k in kernels}
    return len(outs) > 1


def test_a_solves_cost_is_the_same_bits_under_every_blas_kernel():
    # Nehalem (SSE, 2 wide) and Sandybridge (AVX, 4 wide): every x86-64 machine CI runs on has both
    kernels = ("Nehalem", "Sandybridge")
    if not _blas_sums_differ(kernels):
        pytest.skip("numpy's BLAS gives one sum under both kernels here: nothing to tell apart")
    code = _SOLVE.format(bench=str(ROOT / "benchmarks"))
    # both at once: the two processes are the test's time
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, env={**os.environ, "OPENBLAS_CORETYPE": kernel})
            for kernel in kernels]
    costs = set()
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-2000:]
        costs.add(out.strip())
    assert len(costs) == 1, f"one LP's cost under {kernels}: {sorted(costs)}"
