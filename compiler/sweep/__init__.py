"""`infra-compile sweep SPEC SCENARIOS`: one spec compiled under many scenarios, side by side.

    scenarios.py   the scenarios file: changes, ranges expanded, errors located in the file
    apply.py       a scenario as the inputs of a compile: the changed spec and a catalog overlay
    run.py         the compiles, on a local process pool or a Dask cluster
    table.py       one row per scenario from its plan.json; CSV and JSON
    page.py        index.html: the table and the charts

`prepare` validates every scenario's spec before anything is solved (a sweep that would fail on
its 9th scenario after an hour fails at once instead); `sweep` runs the compiles and returns the
folder's files; the CLI writes them atomically, as a compile's output.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from compiler.sweep.run import Job, Outcome, run_jobs
from compiler.sweep.scenarios import Scenario

__all__ = ["Prepared", "prepare", "sweep"]


@dataclass(frozen=True)
class Prepared:
    spec_name: str
    catalog_version: str
    scenarios: tuple[Scenario, ...]
    jobs: tuple[Job, ...]
    base: Job | None = None     # the spec as it is: every scenario's search starts from its plan


def prepare(spec_path: str | Path, scenarios_path: str | Path, *, solver: str = "auto",
            max_nodes: int | None = None, gap: float | None = None, time_limit: float | None = None,
            allow_unpriced_regions: bool = False) -> Prepared:
    """Every scenario's compile inputs, each validated; or CompileError (exit 2) with every
    problem, in the spec (the base spec is invalid) or in the scenarios file (E70x)."""
    from compiler import pipeline
    from compiler.diagnostics import CompileError, Diagnostic, format_path
    from compiler.sweep.apply import scenario_overlay, scenario_spec
    from compiler.sweep.scenarios import load_scenarios

    spec, catalog, doc = pipeline.validate(spec_path, allow_unpriced_regions=allow_unpriced_regions)
    loaded = load_scenarios(scenarios_path, doc.data, catalog)
    jobs, problems = [], []
    with tempfile.TemporaryDirectory(prefix="infra-compile-sweep-") as tmp:
        for s in loaded.items:
            spec_text = scenario_spec(s, doc.data, Path(spec_path).name)
            overlay_text = scenario_overlay(s, catalog, catalog.version)
            spec_file, overlay_file = Path(tmp) / "spec.yaml", Path(tmp) / "catalog.yaml"
            spec_file.write_text(spec_text, encoding="utf-8")
            if overlay_text is not None:
                overlay_file.write_text(overlay_text, encoding="utf-8")
            try:
                pipeline.validate(spec_file, None if overlay_text is None else str(overlay_file),
                                  allow_unpriced_regions=allow_unpriced_regions)
            except CompileError as exc:
                first = exc.diagnostics[0]
                more = len(exc.diagnostics) - 1
                problems.append(Diagnostic(
                    "E704", f"scenario '{s.name}' makes the spec invalid: error[{first.code}] "
                    f"{first.message}" + (f" (and {more} more)" if more else ""),
                    s.path, loaded.doc.position(s.path),
                    f"in the scenario's spec at {format_path(first.path)}" if first.path else None))
                continue
            jobs.append(Job(s.name, spec_text, overlay_text, solver, max_nodes, gap, time_limit,
                            allow_unpriced_regions))
    if problems:
        raise CompileError(problems, source=loaded.doc.source)
    base = Job("base", doc.source.text, None, solver, max_nodes, gap, time_limit, allow_unpriced_regions)
    return Prepared(spec.name, catalog.version, loaded.items, tuple(jobs), base)


def sweep(prepared: Prepared, workers: int | None = None, scheduler: str | None = None,
          on_done: Callable[[Outcome], None] = lambda _o: None) -> tuple[tuple, Mapping[str, str]]:
    """(table rows, the output folder's files): index.html, scenarios.csv, scenarios.json and per
    scenario its spec.yaml, catalog.yaml (if it changes prices) and out/ (what `infra-compile`
    writes) or errors.txt."""
    import json

    from compiler.sweep.page import page
    from compiler.sweep.table import rows, to_csv, to_json

    jobs, base = prepared.jobs, None
    if prepared.base is not None:
        # the base spec first: each scenario starts from its plan where that is still a plan of
        # the scenario, so a relaxation (more power, lower prices, less traffic) ends no dearer
        base = run_jobs((prepared.base,), workers=1)[0]
        if base.ok:
            jobs = tuple(replace(j, start_from=base.artifacts["plan.json"]) for j in jobs)
    outcomes = run_jobs(jobs, workers=workers, scheduler=scheduler, on_done=on_done)
    table = rows(outcomes, prepared.scenarios)
    files: dict[str, str] = {
        "index.html": page(table, prepared.spec_name, prepared.catalog_version),
        "scenarios.csv": to_csv(table),
        "scenarios.json": json.dumps({"spec": prepared.spec_name, "catalog_version": prepared.catalog_version,
                                      "scenarios": to_json(table)}, indent=2, sort_keys=True) + "\n",
    }
    if base is not None and base.ok:
        files["_base/plan.json"] = base.artifacts["plan.json"]
    for job, out in zip(prepared.jobs, outcomes):
        files[f"{job.name}/spec.yaml"] = job.spec_text
        if job.overlay_text is not None:
            files[f"{job.name}/catalog.yaml"] = job.overlay_text
        if out.ok:
            files.update({f"{job.name}/out/{k}": v for k, v in out.artifacts.items()})
        else:
            files[f"{job.name}/errors.txt"] = out.messages + "\n"
    return table, dict(sorted(files.items()))
