"""The stage calls, in order, and nothing else.

    load -> validate -> estimate -> optimize (formulate + solve) -> render -> write

Heavy modules (pulp, jinja2, matplotlib) are imported inside the stage that needs
them so `infra-compile --help` and `validate` start fast.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from compiler.diagnostics import EXIT_AUDIT  # re-exported: tests read pipeline.EXIT_AUDIT
from compiler.diagnostics import Diagnostic, Source
from compiler.optimize.settings import DEFAULT, Settings


# Called with the warnings of a valid spec and the source they point into (the CLI prints them).
Warn = Callable[[Sequence[Diagnostic], Source], None]


@dataclass(frozen=True)
class CompileOptions:
    catalog: str | None = None        # overlay file (--catalog)
    solver: str = "auto"              # auto | cbc | highs (optimize/strategy.py chooses for auto)
    time_limit: float | None = None
    gap: float | None = None
    progress: Callable[[str], None] | None = None
    max_nodes: int | None = None      # None: the optimizer's default (Settings.max_nodes); 0: no limit
    allow_unpriced_regions: bool = False   # E215 a warning, not an error (--allow-unpriced-regions)
    warn: Warn | None = None          # receives the validation's warnings, if there are any
    settings: Settings = DEFAULT      # every tuned number of the estimate's scan and the solver
    baseline: str | None = None       # the plan this one re-plans (--baseline): what it bought is held
    start_from: str | None = None     # a plan the search starts from where it still is one (--start-from)
    max_price_age_days: int | None = None   # older prices are a warning (C010, --max-price-age);
                                            # None: freshness.DEFAULT_MAX_AGE_DAYS
    today: Any = None                 # the date prices' age is counted to; None: freshness.today()
    appraise_limits: bool = False     # price each binding operability limit alone (--appraise-limits):
                                      # one more solve a limit, so off by default


def load_catalog(overlay: str | None = None):
    from compiler.catalog import load_catalog as load

    return load(overlay)


def validate(spec_path: str | Path, catalog_overlay: str | None = None, *,
             allow_unpriced_regions: bool = False, warn: Warn | None = None):
    """load + validate: (Spec, Catalog, Document) or CompileError with every problem. A valid
    spec's warnings (E215 with `allow_unpriced_regions`) go to `warn`."""
    from compiler.source import load

    doc = load(spec_path)
    catalog = load_catalog(catalog_overlay)
    from compiler.validate import check

    checked = check(doc, catalog, allow_unpriced_regions=allow_unpriced_regions)
    if checked.warnings and warn is not None:
        warn(checked.warnings, doc.source)
    return checked.spec, catalog, doc


def estimate(spec_path: str | Path, catalog_overlay: str | None = None, solving: "CompileOptions | None" = None,
             *, allow_unpriced_regions: bool = False, warn: Warn | None = None):
    """load + validate + estimate: (Candidates, Document). `solving`: the options of the compile
    the candidates are for; a long count scan is then bounded by a first plan (estimate_candidates)."""
    spec, catalog, doc = validate(spec_path, catalog_overlay,
                                  allow_unpriced_regions=allow_unpriced_regions, warn=warn)
    if solving is not None:
        return estimate_candidates(spec, catalog, doc, solving), doc
    from compiler.estimate import estimate as estimate_stage

    return estimate_stage(spec, catalog), doc


@dataclass(frozen=True)
class Result:
    """Every stage's output of one compile: the estimate stage's candidates (they hold the Spec
    and the Catalog), the audited plan, the artifacts, the plan without the operability limits
    (compiler.operability.solve_within_limits), and each stage's wall seconds (for
    benchmarks and progress; nothing the compile writes depends on them)."""
    plan: Any
    artifacts: Mapping[str, str]   # relative path -> text, everything the compile writes
    candidates: Any = None
    unlimited: Any = None          # the plan solved without the operability limits, where one was
    seconds: Mapping[str, float] = field(default_factory=dict)   # validate, estimate, optimize (with
                                                                 # operability limits: without them first),
                                                                 # audit, unlimited (their prices alone), render


def compile_spec(spec_path: str | Path, options: CompileOptions = CompileOptions()) -> Result:
    """Every stage, in order; returns each one's output without touching the disk."""
    from compiler.diagnostics import CompileError
    from compiler.optimize import SolveOptions, optimize
    from compiler.plan import with_deadlines

    seconds: dict[str, float] = {}

    def timed(stage: str, run: Callable, *args):
        t0 = time.perf_counter()
        try:
            return run(*args)
        finally:
            seconds[stage] = time.perf_counter() - t0

    spec, catalog, doc = timed("validate", lambda: validate(
        spec_path, options.catalog, allow_unpriced_regions=options.allow_unpriced_regions,
        warn=options.warn))
    _warn_stale_prices(spec, catalog, doc, options)
    kept = base = None
    if options.baseline is not None:
        spec, kept, base = _carried(spec, catalog, options)
    elif options.start_from is not None:
        from compiler import baseline

        kept = baseline.kept(spec, baseline.load(options.start_from), usd=0.0, share=0.0)   # a start: no move priced
    candidates = timed("estimate", estimate_candidates, spec, catalog, doc, options)
    solve_options = SolveOptions(
        solver=options.solver, time_limit=options.time_limit, gap=options.gap,
        progress=options.progress, settings=options.settings, kept=kept,
        **({} if options.max_nodes is None else {"max_nodes": options.max_nodes, "nodes_given": True}))
    free_plan = None
    try:
        if spec.policy.has_limits:
            from compiler.operability import solve_within_limits
            plan, free_plan = timed("optimize", solve_within_limits, candidates, solve_options, optimize)
        else:
            plan = timed("optimize", optimize, candidates, solve_options)
    except CompileError as exc:
        # Infeasibility diagnostics name spec paths; give them positions in the spec.
        raise _positioned(exc, doc) from None
    plan = with_deadlines(plan, {w.name: getattr(w.window, "deadline_days", None) for w in spec.workloads},
                          recurring(spec))
    timed("audit", _audit, candidates, plan, doc)
    if spec.policy.sets_limits:
        from compiler.operability import unlimited, with_limits
        if not spec.policy.has_limits:
            free_plan = plan     # limits that cannot bind (a hold of 1 month, a spot share of 1)
        record = None if free_plan is None else unlimited(free_plan)
        plan = timed("unlimited", with_limits, candidates, plan, record, solve_options, optimize, free_plan,
                     options.appraise_limits)
    if spec.start is not None:
        from dataclasses import replace
        plan = replace(plan, start=spec.start)   # names its months for people; indices stay
    # the baseline only where there is one: without it the render call is the one it always was
    artifacts = timed("render", render_artifacts, plan, candidates.catalog, *(() if base is None else (base,)))
    return Result(plan, artifacts, candidates, free_plan, seconds)


def _warn_stale_prices(spec, catalog, doc, options: CompileOptions) -> None:
    """C010, a warning per site whose prices are older than the options allow: the plan is only
    as cheap as the prices it was solved with."""
    from compiler.catalog import freshness

    if options.warn is None:
        return
    today = options.today or freshness.today()
    found = []
    max_age = freshness.DEFAULT_MAX_AGE_DAYS if options.max_price_age_days is None else options.max_price_age_days
    for row, age in freshness.stale(spec, catalog, today, max_age):
        path = ("sites", row.site, "region") if row.region else ("sites", row.site)
        what = f"{row.item} in {row.region}" if row.region else f"the on-prem node model {row.item}"
        provider = getattr(spec.sites[row.site], "provider", None)
        hint = (f"refresh them (`infra-compile catalog refresh {provider} -o prices.yaml`, then "
                "`--catalog prices.yaml`)" if provider else "update the node model's price in a catalog overlay")
        found.append(Diagnostic(
            "C010", f"site '{row.site_name}' is priced on figures {age} days old ({what}: source "
                    f"'{row.source}', as of {row.as_of}; more than {max_age} days)",
            path, doc.position(path), hint + "; --max-price-age DAYS sets the age", severity="warning"))
    if found:
        options.warn(found, doc.source)


def recurring(spec) -> dict[str, tuple[str, int]]:
    """Each recurring job's period and how many runs the horizon holds (compiler/recurrence.py)."""
    from compiler import recurrence

    schedules = {w.name: recurrence.of(w.window, spec.horizon_months) for w in spec.workloads}
    return {name: (s[0].text, len(s[1])) for name, s in schedules.items() if s is not None}


def _carried(spec, catalog, options: CompileOptions):
    """The spec with what the baseline plan bought before its start held, where it ran each
    workload (compiler/baseline.py), and the baseline Plan (the runbook and the report say what
    changes against it); the baseline's warnings go where the spec's go."""
    from compiler import baseline

    base = baseline.load(options.baseline)
    carried, warnings = baseline.carried(spec, base, catalog)
    if base.catalog_version != catalog.version:
        warnings.append(Diagnostic("E012", f"the baseline was priced on catalog {base.catalog_version}, this "
                                   f"compile on {catalog.version}: its commitments are carried, its costs differ",
                                   severity="warning"))
    if warnings and options.warn is not None:
        options.warn(warnings, Source.of(str(options.baseline), ""))
    return carried, baseline.kept(carried, base), base


def estimate_candidates(spec, catalog, doc, options: CompileOptions):
    """The estimate stage of a compile with `options`: the candidates the model is built from. Where the scan of node counts is long
    (estimate.longest_scan, long training windows), a first plan is made on a sparse ladder of
    counts (the greedy start priced, no search: optimize.greedy_plan), and the full scan then
    leaves out every count that cannot be in a plan as cheap (estimate/floors.py: exact, so the
    model keeps every optimal plan and its bound holds for the whole space). The first plan
    passes the independent audit before its cost is trusted; without one, every count is sized."""
    from compiler.diagnostics import CompileError
    from compiler.estimate import estimate as estimate_stage, longest_scan
    from compiler.estimate.build import Memo
    from compiler.optimize import greedy_plan

    say = options.progress or (lambda _msg: None)
    if longest_scan(spec, catalog) < options.settings.sample_from:
        return estimate_stage(spec, catalog, progress=say)
    memo = Memo()     # the sample's searches, which the full scan repeats
    first = estimate_stage(spec, catalog, sample=True, progress=say, memo=memo)
    plan = greedy_plan(first)
    try:
        if plan is not None:
            _audit(first, plan, doc)
    except CompileError:
        plan = None
    if plan is None:
        return estimate_stage(spec, catalog, progress=say, memo=memo)
    say(f"first plan ${plan.total_cost_usd:,.0f} (greedy, on a sample of the node counts): "
        f"counts that cannot be in a plan as cheap are left out")
    return estimate_stage(spec, catalog, plan_cost=max(plan.total_cost_usd, plan.solver.objective_usd),
                          progress=say, memo=memo)


def _audit(candidates, plan, doc) -> None:
    """The independent audit (compiler.audit, no code shared with the model) re-checks every
    plan before anything is rendered; a finding is an internal error: exit 6, nothing written."""
    import compiler.audit as audit
    from compiler.diagnostics import CompileError, Diagnostic, path_tuple

    findings = audit.audit(candidates.spec, candidates.catalog, candidates, plan)
    if findings:
        diags = [Diagnostic(f.code, f.message, path_tuple(f.path)) for f in findings]
        diags.append(Diagnostic("E601", f"internal error: the plan failed its independent audit "
                                f"({len(findings)} finding{'s' if len(findings) != 1 else ''}); no output was written",
                                hint="this is a bug in the compiler, not in the spec: please report it with the spec"))
        raise _positioned(CompileError(diags, exit_code=EXIT_AUDIT), doc)


def render_artifacts(plan, catalog, baseline=None) -> dict[str, str]:
    """Every file of the output folder. `baseline`: the plan this one re-plans (--baseline); the
    runbook and the report then say what changes against it."""
    from compiler.plan import to_json

    artifacts: dict[str, str] = {"plan.json": to_json(plan)}
    from compiler.render import render
    from compiler.report import render_report

    artifacts.update(render(plan, catalog, baseline))
    artifacts.update(render_report(plan, catalog, baseline))
    return dict(sorted(artifacts.items()))


def _positioned(exc, doc):
    from dataclasses import replace

    from compiler.diagnostics import CompileError

    diags = [d if d.position is not None or not d.path else replace(d, position=doc.position(d.path))
             for d in exc.diagnostics]
    return CompileError(diags, exc.exit_code, exc.source or doc.source)
