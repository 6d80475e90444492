"""Fuzz the WHOLE pipeline (load -> validate -> estimate -> solve -> render) on small specs.

tests/test_fuzz.py carries the volume at the front of the pipeline (hundreds of junk and
mutated documents through load + validate). This suite is the deep end: small generated
platforms (1-3 workloads, 1-3 of up to 8 sites, from benchmarks/bench_pipeline.platform_spec) with
seeded mutations that stay well-formed enough to reach the estimator and the solver:
extreme traffic, tiny deadlines and power budgets, huge or tiny inline models, pins to
GPUs and sites that cannot serve, huge and odd numbers. Every input must end in a plan
(exit 0) or a CompileError with exit code 2 (invalid) or 3 (infeasible) carrying clear
diagnostics; anything else (a traceback, exit 5, an empty message) fails. Hostile files
(empty, binary, NUL, alias bomb, deep nesting, NaN/Infinity, huge numbers, duplicate keys,
look-alike names) go through the same entry point from disk and must end in exit 2.
"""

from __future__ import annotations

import copy
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import pipeline
from compiler.diagnostics import CompileError, render_all

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pipeline import MAX_SITES, platform_spec  # noqa: E402

# 40 examples: about two thirds end in a plan (every stage, render included), a quarter
# infeasible (estimate + solve + explain); measured ~30 s on 2 cores.
DEEP = settings(max_examples=40, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_NODES = 10
OUTCOMES: Counter = Counter()     # exit code -> count, read by the last test


def _trim_sites(data: dict, keep: list[str]) -> None:
    """Drop sites not in keep and re-point every reference, so the spec stays valid."""
    data["sites"] = [s for s in data["sites"] if s["name"] in keep]
    clouds = [s for s in data["sites"] if s["type"] == "cloud"]
    data["policy"]["placement"] = "hybrid" if clouds and len(clouds) < len(keep) else (
        "cloud" if clouds else "on_prem")
    for w in data["workloads"]:
        w.pop("sites", None)
        if "data" in w and w["data"]["home"] not in keep:
            w["data"]["home"] = keep[0]


INLINE = st.fixed_dictionaries({
    "arch": st.just("dense"),
    "params_b": st.sampled_from([0.001, 0.5, 7, 70, 405, 5000, 1e9]),
    "layers": st.sampled_from([1, 32, 80, 10_000]),
    "hidden": st.sampled_from([64, 4096, 8192, 10**6]),
    "heads": st.sampled_from([1, 32, 64]),
    "kv_heads": st.sampled_from([1, 8, 64]),
    "vocab": st.sampled_from([2, 32000, 128256]),
    "ffn_hidden": st.sampled_from([1, 14336, 28672]),
})

ODD = st.sampled_from([0, -1, 1e-9, 1e300, 10**40, "1e309", True, None, [], {}, "H100", "Н100", 0.5])


@st.composite
def mutation(draw, data: dict):
    """One change that keeps the spec parseable; most keep it schema-valid too."""
    w = draw(st.sampled_from(data["workloads"]))
    kind = draw(st.sampled_from(["traffic", "deadline", "power", "inline", "pin", "allowed", "quota",
                                 "horizon", "odd", "tokens", "availability", "drop_key"]))
    if kind == "traffic" and w["kind"] == "inference":
        w["traffic"]["peak_rps"] = draw(st.sampled_from([0.001, 1, 500, 100_000, 1e12]))
        w["traffic"]["output_tokens"] = draw(st.sampled_from([1, 250, 32768, 10**7]))
    elif kind == "deadline" and "deadline_days" in w.get("window", {}):
        w["window"]["deadline_days"] = draw(st.sampled_from([0.01, 0.5, 1, 3650]))
    elif kind == "power":
        for s in data["sites"]:
            if s["type"] == "on_prem":
                s["power_kw"] = draw(st.sampled_from([0.1, 5, 50, 1e7]))
                s["max_racks"] = draw(st.sampled_from([1, 2, 1000]))
    elif kind == "inline" and w["kind"] == "training" and "tokens" in w:
        w["model"] = draw(INLINE)
    elif kind == "pin":
        w["pin"] = draw(st.fixed_dictionaries({}, optional={
            "gpu": st.sampled_from(["H100", "L4", "V100", "MI300X", "B200"]),
            "gpus": st.sampled_from([1, 3, 8, 4096, 10**6]),
            "site": st.sampled_from([s["name"] for s in data["sites"]] + ["nowhere"]),
            "pricing": st.sampled_from(["on_demand", "spot", "owned", "purchase", "reserved_3y"])}))
    elif kind == "allowed":
        data["policy"]["allowed_gpus"] = draw(st.lists(
            st.sampled_from(["H100", "H200", "A100-80GB", "L40S", "L4", "V100", "B200"]),
            min_size=1, max_size=3, unique=True))
    elif kind == "quota":
        for s in data["sites"]:
            if s["type"] == "cloud":
                s["quotas"] = {draw(st.sampled_from(["H100", "L40S", "A100-80GB"])): draw(
                    st.sampled_from([0, 1, 8, 64]))}
    elif kind == "horizon":
        data["horizon_months"] = draw(st.sampled_from([1, 2, 120, 10**6]))
    elif kind == "tokens" and "tokens" in w:
        w["tokens"] = draw(st.sampled_from([1.0, 1e6, 1e15, 1e30]))
    elif kind == "availability" and w["kind"] == "inference":
        w["slo"]["availability"] = draw(st.sampled_from([0.5, 0.999, 0.99999, 1.0]))
    elif kind == "odd":
        path = draw(st.sampled_from(sorted(k for k in w if k not in ("name", "kind"))))
        w[path] = draw(ODD)
    elif kind == "drop_key":
        w.pop(draw(st.sampled_from(sorted(w))), None)


@st.composite
def small_spec(draw) -> str:
    n = draw(st.integers(1, 3))
    data = platform_spec(n, seed=draw(st.integers(0, 10_000)), horizon=draw(st.sampled_from([6, 12, 24])),
                         sites=draw(st.integers(2, MAX_SITES)))
    names = [s["name"] for s in data["sites"]]
    keep = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    _trim_sites(data, sorted(keep, key=names.index))
    for _ in range(draw(st.integers(0, 2))):
        draw(mutation(data))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def compile_outcome(text: str, tmp: Path) -> int:
    """Run every stage on text; return the exit code, failing on anything but 0, 2 or 3."""
    path = tmp / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        # the outcome is checked, not the plan's cost: a node budget keeps a long search short
        result = pipeline.compile_spec(path, pipeline.CompileOptions(max_nodes=FUZZ_NODES))
    except CompileError as exc:
        assert exc.exit_code in (2, 3), (exc.exit_code, [d.message for d in exc.diagnostics])
        assert exc.diagnostics, "a CompileError must carry at least one diagnostic"
        rendered = render_all(exc.diagnostics, exc.source)
        assert "Traceback" not in rendered and rendered.strip()
        for d in exc.diagnostics:
            assert d.code[:1] == "E" and d.message.strip()
        return exc.exit_code
    plan = json.loads(result.artifacts["plan.json"])
    assert plan["solver"]["status"] in ("optimal", "feasible")
    assert {w["name"] for w in plan["workloads"]} == {w["name"] for w in yaml.safe_load(text)["workloads"]}
    assert "report.md" in result.artifacts
    return 0


@pytest.mark.slow
@DEEP
@given(text=small_spec())
def test_small_specs_end_in_a_plan_or_a_clear_error(tmp_path_factory, text):
    if text not in _DRAWN:      # hypothesis may draw one spec twice: its compile is the same
        _DRAWN[text] = compile_outcome(text, tmp_path_factory.mktemp("fuzz"))
    OUTCOMES[_DRAWN[text]] += 1


_DRAWN: dict[str, int] = {}     # spec text -> its exit code


@pytest.mark.parametrize("mutate", [
    lambda d: d["workloads"][0].update(name="x" * 63),
    lambda d: d["workloads"].extend(copy.deepcopy(d["workloads"][:1])),            # duplicate name
    lambda d: d["sites"][0].update(quotas={"H100": 0, "H200": 0, "A100-80GB": 0, "L40S": 0}),
    lambda d: d["workloads"][0].update(pin={"gpu": "V100"}),                      # not allowed
    lambda d: d["policy"].update(allowed_gpus=["L4"]),
])
def test_hand_picked_edges_end_cleanly(tmp_path, mutate):
    data = platform_spec(2, seed=3, horizon=12)
    _trim_sites(data, ["aws-use1"])
    mutate(data)
    assert compile_outcome(yaml.safe_dump(data, sort_keys=False), tmp_path) in (0, 2, 3)


def _valid_text() -> str:
    data = platform_spec(1, seed=0, horizon=12)     # one inference service at 99.9%: two sites
    _trim_sites(data, ["aws-use1", "gcp-usc1"])
    return yaml.safe_dump(data, sort_keys=False)


HOSTILE_FILES = {
    "empty": b"",
    "whitespace": b"\n \n",
    "binary": bytes(range(256)),
    "nul": b"name: a\x00b\n",
    "latin1": "name: caf\xe9\n".encode("latin-1"),
    "bom": b"\xef\xbb\xbf" + _valid_text().encode(),
    "alias_bomb": ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi"))).encode(),
    "deep": ("x: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
    "deep_maps": ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n").encode(),
    "nan": _valid_text().replace("horizon_months: 12", "horizon_months: .nan").encode(),
    "inf": _valid_text().replace("horizon_months: 12", "horizon_months: -.inf").encode(),
    "huge_int": _valid_text().replace("horizon_months: 12", "horizon_months: " + "9" * 5000).encode(),
    "duplicate_key": _valid_text().replace("horizon_months: 12", "horizon_months: 12\nhorizon_months: 13").encode(),
    "lookalike_gpu": _valid_text().replace("- H100", "- \u041d100").encode(),
    "lookalike_site": _valid_text().replace("name: aws-use1", "name: aws-us\u04351").encode(),
    "python_tag": b"name: !!python/object/apply:os.system ['true']\n",
    "two_documents": (_valid_text() + "---\n" + _valid_text()).encode(),
    "list_top": b"- 1\n- 2\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_files_end_in_exit_2_through_the_whole_pipeline(tmp_path, name):
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(HOSTILE_FILES[name])
    expected = 0 if name == "bom" else 2
    try:
        pipeline.compile_spec(path)
        code = 0
    except CompileError as exc:
        code = exc.exit_code
        rendered = render_all(exc.diagnostics, exc.source)
        assert exc.diagnostics and "Traceback" not in rendered
        assert all(d.code[:1] == "E" and d.message.strip() for d in exc.diagnostics)
    assert code == expected


def test_fuzz_reached_every_outcome():
    """The generator is worth its time only if it gets past the validator and to infeasibility."""
    if not OUTCOMES:
        pytest.skip("run with test_small_specs_end_in_a_plan_or_a_clear_error")
    assert OUTCOMES[0] >= 15 and OUTCOMES[2] >= 1 and OUTCOMES[3] >= 1, OUTCOMES
