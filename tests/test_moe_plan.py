"""A plan for an MoE service and an MoE pretraining job, against the same spec planned as if MoE
ran as a dense model of its active parameters (the estimate before the MoE terms: experts at the
dense rate, no imbalance, no grouped-GEMM loss, decode that reads every expert's weights for the
compute of the active ones).

The plan's GPUs must move by the factor the model's estimate moves: the job's GPU-hours by its
tokens per GPU-second, the service's GPUs by its tokens per GPU-second. And the report's "Where the
time goes" for the job names the MoE terms, with the shares plan.json carries.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from compiler.estimate import inference
from compiler.estimate.memory import weight_bytes
from compiler.pipeline import CompileOptions, compile_spec

pytestmark = pytest.mark.slow

SPEC = """\
apiVersion: infra-compile/v1
name: moe-platform
horizon_months: 3

sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand]

policy:
  allowed_gpus: [H100]

workloads:
  - name: moe-pretrain
    kind: training
    model: qwen3-30b-a3b
    tokens: 4.0e11
    seq_len: 4096
    precision: bf16
    window: {start_month: 0, deadline_days: 30}

  - name: moe-chat
    kind: inference
    model: mixtral-8x7b
    quantization: fp8
    traffic: {peak_rps: 300, input_tokens: 1000, output_tokens: 250}
    slo: {ttft_p99_ms: 3000, tpot_p99_ms: 120}
"""

# The MoE terms off: the experts at the dense rate with no loss (efficiency 1, a grouped GEMM at
# any row count as fast as a large one, routed copies free), routing even.
DENSE_LIKE = """\
sources:
  moe-off: {title: "test: MoE terms neutral", url: "https://example.invalid/moe-off", as_of: "2026-11-28"}
factors:
  - {name: moe_layer_efficiency, value: 1.0, source: moe-off}
  - {name: moe_imbalance, value: 1.0, source: moe-off}
  - {name: moe_gemm_half_tokens, value: 0.000001, source: moe-off}
  - {name: moe_copy_bytes_per_hidden.bf16, value: 0, source: moe-off}
  - {name: moe_copy_bytes_per_hidden.fp8, value: 0, source: moe-off}
  - {name: moe_copy_bytes_per_hidden.default, value: 0, source: moe-off}
"""


def _dense_decode(model, quant, batch, bw, c, catalog):
    """The decode GEMMs of an MoE model as a dense model of its active parameters that reads every
    expert's weights each step (the estimate before the MoE terms)."""
    return max(weight_bytes(model.params_b * 1e9, quant, catalog) / bw, batch * 2 * model.active_b * 1e9 / c)


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("moe")
    spec = d / "moe.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    overlay = d / "moe-off.yaml"
    overlay.write_text(DENSE_LIKE, encoding="utf-8")
    moe = compile_spec(spec)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inference, "moe_gemm_s", _dense_decode)
        flat = compile_spec(spec, CompileOptions(catalog=str(overlay)))
    return ({"plan": json.loads(moe.artifacts["plan.json"]), "report": moe.artifacts["report.md"]},
            {"plan": json.loads(flat.artifacts["plan.json"])})


def _workload(plan: dict, name: str) -> dict:
    return next(w for w in plan["workloads"] if w["name"] == name)


def _gpu_hours(w: dict) -> float:
    return sum(p["gpus"] / p["nodes"] * sum(h["monthly_node_hours"][m] for h in p["holdings"]
                                            for m in range(len(h["monthly_node_hours"])))
               for p in w["placements"] if p["nodes"])


def test_the_pretraining_job_takes_the_gpu_hours_its_moe_estimate_says(plans):
    moe, flat = plans
    a, b = _workload(moe["plan"], "moe-pretrain"), _workload(flat["plan"], "moe-pretrain")
    # Both are sized at the tokens per second of the candidate each plan chose; GPU-hours are
    # tokens / (tokens per GPU-second) plus what interruptions lose, so their ratio is the inverse
    # ratio of tokens per GPU-second, to the lost share's difference between the two sizes.
    rate = lambda w: w["estimate"]["tokens_per_s"] / w["gpus"]
    assert rate(a) < rate(b) * 0.9, "the MoE terms must slow the job"
    ratio = _gpu_hours(a) / _gpu_hours(b)
    assert ratio == pytest.approx(rate(b) / rate(a), rel=0.03)


def test_the_service_takes_the_gpus_its_moe_estimate_says(plans):
    moe, flat = plans
    a, b = _workload(moe["plan"], "moe-chat"), _workload(flat["plan"], "moe-chat")
    demand = 300 * 250   # output tokens/s at peak
    per_gpu = lambda w: w["estimate"]["tokens_per_s"] / w["gpus"]   # the service's rate over its GPUs
    for w in (a, b):
        # whole replicas carry the demand, and one replica fewer would not
        assert w["gpus"] * per_gpu(w) >= demand > (w["gpus"] - w["layout"]["tp"]) * per_gpu(w)
    want = per_gpu(b) / per_gpu(a)
    assert want > 1.05, "streaming the hit experts' weights beside their math serves less per GPU"
    # whole replicas round each count up, by less than one replica each
    assert a["gpus"] / b["gpus"] == pytest.approx(want, rel=(a["layout"]["tp"] + b["layout"]["tp"]) / b["gpus"])


def test_the_report_names_the_moe_terms_with_the_plans_shares(plans):
    moe, _ = plans
    w = _workload(moe["plan"], "moe-pretrain")
    shares = w["estimate"]["step_breakdown"]
    assert shares["moe_gemm"] > 0.1
    assert math.isclose(sum(shares.values()), 1.0, abs_tol=0.001)
    section = moe["report"].split("moe-pretrain", 1)[1].split("Where the time goes", 1)[1].split("| Site |", 1)[0]
    label = "MoE experts past the dense rate (routing, small GEMMs, imbalance)"
    assert f"| {label} | {shares['moe_gemm'] * 100:.1f}% |" in section
    # the all-to-all's row stands where the layout has one to expose (terms at 0 are left out)
    ep = "MoE dispatch and combine (all-to-all), exposed"
    assert (ep in section) == (shares["exposed_ep"] > 0)
