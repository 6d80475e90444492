"""A spec's and a sweep's numbers are bounded by the schema (spec.schema.json's maxima, far above
any platform's): a traffic of 1e300 requests a second, stated or reached by a scenario's factor,
is refused at once instead of sizing replicas until memory runs out."""

from __future__ import annotations

import subprocess
import sys

SPEC = """\
apiVersion: infra-compile/v1
name: bounded
horizon_months: 3
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand]
workloads:
  - name: chat
    kind: inference
    model: llama-3-8b
    quantization: fp8
    traffic: {peak_rps: RPS, input_tokens: 600, output_tokens: 150}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}
"""


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_a_traffic_of_1e300_is_refused_by_the_schema(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("RPS", "1.0e+300"))
    run = _run("validate", str(spec), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "error[E102] at $.workloads[0].traffic.peak_rps: must be <= 10000000, got 1e+300" in run.stderr


def test_a_sweep_scenario_that_scales_traffic_to_1e300_is_refused_before_any_solve(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("RPS", "4"))
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text("apiVersion: infra-compile/v1\nscenarios:\n  - name: huge\n"
                         "    traffic: {values: [1.0e+300]}\n")
    run = _run("sweep", str(spec), str(scenarios), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "error[E704]" in run.stderr and "must be <= 10000000, got 4e+300" in run.stderr
    assert not (tmp_path / "out").exists()
