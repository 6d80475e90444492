"""The command line contract: routing, exit codes, no tracebacks."""

import subprocess
import sys

import pytest

from compiler.cli import _route


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_a_first_argument_that_is_not_a_command_goes_to_compile():
    assert _route(["spec.yaml"]) == ["compile", "spec.yaml"]
    assert _route(["spec.yaml", "-o", "x"]) == ["compile", "spec.yaml", "-o", "x"]
    assert _route(["--debug", "spec.yaml"]) == ["compile", "--debug", "spec.yaml"]
    assert _route(["validate", "spec.yaml"]) == ["validate", "spec.yaml"]
    assert _route(["--help"]) == ["--help"]
    assert _route([]) == []


def test_missing_file_is_exit_2_with_a_located_message(tmp_path):
    r = run(str(tmp_path / "nope.yaml"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"{tmp_path / 'nope.yaml'}: error[E001]: no such file"
    assert "Traceback" not in r.stderr


def test_usage_error_is_exit_2():
    r = run("compile", "--solver", "gurobi", "x.yaml")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_syntax_error_shows_line_and_caret(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: infra-compile/v1\nname: [unclosed\n")
    r = run("validate", str(bad))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:3:1: error[E003] at $: invalid YAML")
    assert "Traceback" not in r.stderr


def test_version_and_help():
    assert run("--version").stdout.startswith("infra-compile ")
    r = run("--help")
    assert r.returncode == 0 and "Exit codes" in r.stdout


def test_five_mistakes_from_the_command_line(monkeypatch):
    # Five different mistakes, all reported at once, each at its line and column, with the
    # did-you-mean hint for the misspelt key; exit 2 and no traceback.
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    r = run("validate", "tests/errors/five-mistakes.yaml", cwd=root)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr == (root / "tests" / "errors" / "five-mistakes.txt").read_text(encoding="utf-8")
    heads = [line.split(": error[")[0] + " " + line.split("error[")[1][:4]
             for line in r.stderr.splitlines() if ": error[" in line]
    assert heads == ["tests/errors/five-mistakes.yaml:16:13 E102", "tests/errors/five-mistakes.yaml:17:5 E101",
                     "tests/errors/five-mistakes.yaml:18:16 E105", "tests/errors/five-mistakes.yaml:20:33 E202",
                     "tests/errors/five-mistakes.yaml:23:12 E209"]
    assert "hint: did you mean 'optimizer'?" in r.stderr


@pytest.mark.slow
def test_every_example_validates_from_the_command_line():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    examples = sorted((root / "examples").glob("*.yaml"))
    assert len(examples) >= 4
    for path in examples:
        r = run("validate", str(path))
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"{path}: ok (")


@pytest.mark.slow
def test_estimate_prints_candidates_per_workload_as_a_table_and_as_json():
    import json
    from pathlib import Path
    spec = Path(__file__).resolve().parents[1] / "examples" / "multi-region-inference.yaml"
    text = run("estimate", str(spec))
    assert text.returncode == 0, text.stderr
    for name in ("chat-70b (inference)", "assistant-8b (inference)"):
        assert name in text.stdout
    assert "TTFT" in text.stdout or "ttft" in text.stdout.lower()
    r = run("estimate", str(spec), "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [w["name"] for w in data["workloads"]] == ["chat-70b", "assistant-8b"]
    slo = {"chat-70b": (800, 60), "assistant-8b": (400, 40)}   # (TTFT, TPOT) p99 in the spec
    for w in data["workloads"]:
        assert w["kind"] == "inference" and w["candidates"]
        ttft, tpot = slo[w["name"]]
        for c in w["candidates"]:
            assert c["tokens_per_s"] > 0 and c["batch"] >= 1 and c["memory_gb_per_gpu"] > 0
            assert 0 < c["ttft_ms"] <= ttft and 0 < c["tpot_ms"] <= tpot


def test_pinned_workloads_get_every_estimate_field_in_the_plan(tmp_path):
    # A pin fixes the choice; the plan still carries the full estimate for that workload.
    from pathlib import Path
    from compiler.pipeline import compile_spec
    import json
    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "llm-pretrain-aws.yaml").read_text(encoding="utf-8")
    text = text.replace("    sites: [aws-use1]              # keep the ablation next to its data\n",
                        "    sites: [aws-use1]\n    pin: {gpu: H100, gpus: 16, site: aws-use1, pricing: on_demand}\n")
    text += ("\n  - name: chat\n    kind: inference\n    model: llama-3-8b\n"
             "    traffic: {peak_rps: 5, input_tokens: 500, output_tokens: 100}\n"
             "    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 60}\n    pin: {gpu: H100, gpus: 2}\n")
    spec = tmp_path / "pinned.yaml"
    spec.write_text(text, encoding="utf-8")
    plan = json.loads(compile_spec(spec).artifacts["plan.json"])
    by_name = {w["name"]: w for w in plan["workloads"]}
    ablation, chat = by_name["llama-8b-ablation"], by_name["chat"]
    assert (ablation["gpu"], ablation["gpus"]) == ("H100", 16)
    assert [(p["site"], p["pricing"]) for p in ablation["placements"]] == [("aws-use1", "on_demand")]
    for key in ("memory_gb_per_gpu", "duration_hours", "tokens_per_s", "mfu"):
        assert ablation["estimate"][key] > 0, key
    assert chat["gpu"] == "H100" and chat["layout"]["tp"] == 2
    for key in ("memory_gb_per_gpu", "tokens_per_s", "ttft_ms", "tpot_ms", "batch"):
        assert chat["estimate"][key] > 0, key


def test_readme_commands_and_ci_agree():
    # The README's two quick-start commands: the first runs an example that exists through the
    # console script pyproject declares; the second is exactly what .ci/run executes.
    import re
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first, second = re.findall(r"```sh\n(.*?)\n```", quick, re.S)[:2]
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && ")
    script, example = first.rsplit("&& ", 1)[1].split()
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert script in pyproject["project"]["scripts"]
    assert (root / example).is_file()
    assert second == "pip install -e '.[test]' && pytest"
    ci = [line.strip() for line in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert second in ci


@pytest.mark.slow
def test_progress_on_a_terminal_and_a_one_screen_summary(tmp_path):
    """On a terminal the compile shows a live status (the stage, then the solver's result) on
    stderr and ends with a summary that fits one screen; -q or a pipe shows no spinner."""
    import os
    from pathlib import Path

    spec = str(Path(__file__).resolve().parents[1] / "examples" / "onprem-vision.yaml")
    env = {**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "120"}
    r = subprocess.run([sys.executable, "-m", "compiler", spec, "-o", str(tmp_path / "a")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    # The spinner redraws ~12 times a second: a stage shorter than that may never be drawn,
    # but the start and the solver's result (shown while rendering) always are.
    assert "compiling..." in r.stderr and "cbc: optimal" in r.stderr
    lines = r.stdout.splitlines()
    assert 3 <= len(lines) <= 40
    assert "onprem-vision" in lines[0] and "total" in lines[0]
    assert lines[-1].startswith("wrote ")
    piped = run(spec, "-o", str(tmp_path / "b"))
    assert piped.returncode == 0 and piped.stderr == ""


@pytest.mark.slow
def test_max_nodes_stops_the_search_at_the_same_plan_on_every_run(tmp_path):
    # Stopped after 3 branch-and-bound nodes, the search keeps a plan dearer than its bound, says
    # so, and stops there on every run (a node count does not depend on the machine's speed,
    # unlike --time-limit). With more nodes it follows the same search further: never dearer.
    # The multi-region example's first 4 months on two of its five GPU types (H100 and L40S): a
    # search 3 nodes do not close (1.2% above its bound; its first 3 months close at the root) and
    # 60 nodes prove optimal, in a fraction of the time of the whole year (each compile about 4 s;
    # on all five types 18 s, and 60 nodes do not close it either).
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "multi-region-inference.yaml").read_text()
    assert "\nhorizon_months: 12\n" in text and "\n  allowed_gpus: [H100, H200, A100-80GB, L40S, L4]\n" in text
    spec = tmp_path / "four-months.yaml"
    spec.write_text(text.replace("\nhorizon_months: 12\n", "\nhorizon_months: 4\n")
                    .replace("\n  allowed_gpus: [H100, H200, A100-80GB, L40S, L4]\n", "\n  allowed_gpus: [H100, L40S]\n"))
    plans = []
    for k in range(2):
        r = run(str(spec), "-o", str(tmp_path / f"out{k}"), "--max-nodes", "3")
        assert r.returncode == 0, r.stderr
        assert "stopped at 'feasible'" in r.stdout and "--max-nodes" in r.stdout
        plans.append(json.loads((tmp_path / f"out{k}" / "plan.json").read_text()))
    for p in plans:
        p["solver"].pop("seconds")
    assert plans[0] == plans[1]
    s = plans[0]["solver"]
    assert s["status"] == "feasible"
    assert s["best_bound_usd"] < s["objective_usd"] and s["gap"] > 0
    r = run(str(spec), "-o", str(tmp_path / "more"), "--max-nodes", "60", "-q")
    assert r.returncode == 0, r.stderr
    more = json.loads((tmp_path / "more" / "plan.json").read_text())["solver"]
    assert s["best_bound_usd"] - 0.01 <= more["objective_usd"] <= s["objective_usd"] + 0.01


def test_the_default_node_limit_in_help_is_the_optimizers():
    from compiler.optimize import DEFAULT as s
    r = run("compile", "--help")
    text = " ".join(" ".join(r.stdout.split()).replace("│", "").split())
    assert (f"[default: {s.max_nodes}; for HiGHS going on from the improving rounds {s.highs_nodes}, or below "
            f"{s.settle_max_integers:,} integer variables {s.settle_after} and then up to {s.settle_nodes} "
            f"pruned at {s.settle_gap:.0%};") in text


def test_a_node_budget_written_out_counts_as_asked_for_even_at_the_default(monkeypatch):
    """--max-nodes 1000 is the default's number, but written out it asks for a search of 1,000
    nodes: the optimizer must not take it for the default (which skips the search on large
    platforms and gives HiGHS 100 nodes after the rounds)."""
    from pathlib import Path

    import compiler.optimize as optimize_mod
    from compiler import pipeline
    from compiler.diagnostics import CompileError

    seen = []

    def fake_optimize(candidates, options):
        seen.append(options)
        raise CompileError([])

    monkeypatch.setattr(optimize_mod, "optimize", fake_optimize)
    spec = Path(__file__).resolve().parents[1] / "examples" / "onprem-vision.yaml"
    asked = []
    for nodes in (None, optimize_mod.DEFAULT.max_nodes):
        with pytest.raises(CompileError):
            pipeline.compile_spec(spec, pipeline.CompileOptions(max_nodes=nodes))
        asked.append({(o.max_nodes, o.nodes_given) for o in seen})    # every solve of the compile
        seen.clear()
    assert asked == [{(optimize_mod.DEFAULT.max_nodes, False)}, {(optimize_mod.DEFAULT.max_nodes, True)}]


@pytest.mark.slow
def test_an_unpriced_region_is_an_error_and_allow_unpriced_regions_makes_it_a_warning(tmp_path):
    # Exit 2 with E215 by default; with the option the same text as a warning, exit 0, and the
    # compile goes on without the site.
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    spec = "tests/errors/e215-unpriced-region.yaml"
    expected = (root / "tests" / "errors" / "e215-unpriced-region.txt").read_text(encoding="utf-8")
    r = run("validate", spec, cwd=root)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", expected)

    warning = (expected.replace("error[E215]", "warning[E215]")
               .replace("would get no candidates", "gets no candidates")
               .replace(", or pass --allow-unpriced-regions to accept the site with a warning", ""))
    r = run("validate", "--allow-unpriced-regions", spec, cwd=root)
    assert (r.returncode, r.stderr) == (0, warning)
    assert r.stdout == f"{spec}: ok (1 workloads, 2 sites)\n"
    r = run("validate", "--allow-unpriced-regions", "--format", "json", spec, cwd=root)
    [d] = json.loads(r.stdout)["diagnostics"]
    assert (r.returncode, d["code"], d["severity"], d["path"]) == (0, "E215", "warning", "$.sites[1].region")

    r = run("compile", "--allow-unpriced-regions", "-q", "-o", str(tmp_path / "out"), spec, cwd=root)
    assert (r.returncode, r.stderr) == (0, warning)
    plan = json.loads((tmp_path / "out" / "plan.json").read_text(encoding="utf-8"))
    assert plan["pools"] and {p["site"] for p in plan["pools"]} == {"aws-use1"}
    assert run("compile", "-q", "-o", str(tmp_path / "no"), spec, cwd=root).returncode == 2
