"""A re-plan's baseline (`--baseline PLAN`): the plan deployed or approved before this one.

What the baseline bought before the new spec's `start` is bought: its reserved terms that began
before it and still run become the sites' held commitments (CloudSite.reserved), and the nodes
it bought for a data centre become owned nodes (OnPremSite.owned). Months are matched by the
calendar: a baseline that starts three months before the spec has its month 3 at the spec's
month 0. The spec's own `reserved` and `owned` for a pool stand in for what the baseline says
of it where the baseline held them itself (they are the same commitments); what the baseline
bought is carried whatever the spec states.

load() reads the plan and says clearly what is wrong with a file that is not one (unreadable,
not JSON, not a plan.json the schema accepts), with the file, line and column; carried() says
what the baseline cannot tell (another spec, another catalog, an undated side) as warnings.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compiler import plan_reader, unit_costs
from compiler.diagnostics import CompileError, Diagnostic, Source, did_you_mean
from compiler.plan import Calendar, Plan, month_number
from compiler.spec import TERM_MONTHS, CloudSite, HeldReservation, OnPremSite, OwnedNodes, Spec

HINT = plan_reader.HINT


def load(path: str | Path) -> Plan:
    """The baseline plan in `path`, or a CompileError (exit 2, naming the file) that says why the
    file is none: compiler/plan_reader.py reads it as it reads every plan.json from outside."""
    return plan_reader.read(path, complete=True)


def shift(spec: Spec, baseline: Plan) -> int | None:
    """How many months the spec's start is after the baseline's (the baseline's month k is the
    spec's month k - shift); None where either is undated (nothing can be said to be bought)."""
    if spec.start is None or baseline.start is None:
        return None
    return month_number(spec.start) - month_number(baseline.start)


def carried(spec: Spec, baseline: Plan, catalog=None) -> tuple[Spec, list[Diagnostic]]:
    """The spec with what the baseline bought before its start held or owned (bought in the
    baseline's first month: with the catalog, their useful life ends where it says), and the
    warnings that say what the baseline could not carry."""
    warnings = []
    source = plan_reader.source_of(baseline)
    if baseline.spec_name != spec.name:
        raise CompileError([Diagnostic("E011", f"the baseline is a plan of '{baseline.spec_name}', this spec is "
                                       f"'{spec.name}'", ("spec", "name"),
                                       hint="pass the plan this spec's previous compile wrote")], source=source)
    k = shift(spec, baseline)
    if k is None:
        warnings.append(Diagnostic("E012", "the baseline or the spec has no start, so nothing the baseline bought "
                                   "can be dated before this plan: no commitment is carried", severity="warning",
                                   hint="give both a start: YYYY-MM"))
        return spec, warnings
    if k < 0:
        raise CompileError([Diagnostic("E011", f"the baseline starts in {baseline.start}, after this spec's start "
                                       f"({spec.start})", ("start",),
                                       hint="a re-plan starts no earlier than the plan it follows")], source=source)
    errors = _unknown(spec, baseline, k, catalog)
    if errors:
        raise CompileError(errors, source=source)
    sites = []
    for site in spec.sites:
        if isinstance(site, CloudSite):
            sites.append(replace(site, reserved=site.reserved + _held(site, Calendar(spec.start), baseline, k)))
        else:
            sites.append(replace(site, owned=site.owned + _bought(site, baseline, k, spec.horizon_months, catalog)))
    gone = sorted({p.site for p in baseline.pools} - {s.name for s in spec.sites})
    if gone:
        warnings.append(Diagnostic("E012", f"the baseline's sites {', '.join(gone)} are not in the spec: what it "
                                   "bought there is neither used nor shown", severity="warning"))
    return replace(spec, sites=tuple(sites)), warnings


def _unknown(spec: Spec, baseline: Plan, k: int, catalog) -> list[Diagnostic]:
    """What the baseline would carry that this catalog does not know: a held term of an instance
    the site's region does not sell is checked as the spec's own `reserved` is (semantic.py's
    E218, the same code), nodes bought of a model the catalog lacks as the spec's `owned` (E212).
    Each at the baseline pool's path."""
    if catalog is None:
        return []
    from compiler import semantic
    from compiler.source import Document

    data = {"start": spec.start}
    checker = semantic._Checker(Document(data, Source("<baseline>"), {}, {}), data, catalog)   # no positions
    sites = {s.name: s for s in spec.sites}
    calendar = Calendar(spec.start)
    out: list[Diagnostic] = []
    for i, p in enumerate(baseline.pools):
        site = sites.get(p.site)
        if isinstance(site, CloudSite) and p.pricing in TERM_MONTHS:
            # only the terms carried: those that began before the spec's start and still run
            for r in p.reservations:
                began = r.start_month - k
                if began < 0 < began + TERM_MONTHS[p.pricing] and r.nodes > 0:
                    held = {"instance": p.instance, "nodes": r.nodes, "term": p.pricing,
                            "until": calendar.name(began + TERM_MONTHS[p.pricing])}
                    out += [d for d in checker.held_reservation(("pools", i), {"provider": site.provider,
                                                                              "region": site.region}, held)
                            if d.severity == "error"]
                    break
        elif isinstance(site, OnPremSite) and p.pricing == "purchase" and k > 0 and p.nodes > 0 \
                and p.instance not in catalog.onprem_nodes:
            nodes = catalog.onprem_nodes
            out.append(Diagnostic("E212", f"unknown on-prem node model '{p.instance}'", ("pools", i, "instance"),
                                  hint=did_you_mean(p.instance, nodes) or ("on-prem node models: "
                                                                           + ", ".join(sorted(nodes)))))
    return out


def kept(spec: Spec, baseline: Plan, usd: float | None = None, share: float | None = None):
    """Where the baseline ran each workload the spec still has (moves.Kept): a job's candidate,
    a service's candidates, what a move must save (`usd`, by default policy.replan.min_saving_usd;
    0: moves are free, the baseline is only where the search starts), and the baseline's own
    decisions by variable name, in the spec's months."""
    from compiler.optimize.moves import Kept
    from compiler.problem import buy_name, res_name, x_id, y_id

    k = shift(spec, baseline) or 0
    names = {w.name for w in spec.workloads}
    training = {w.name: w.placements[0].candidate for w in baseline.workloads
                if w.name in names and w.kind == "training" and w.placements and w.placements[0].candidate}
    serving = {w.name: frozenset(p.candidate for p in w.placements if p.candidate) for w in baseline.workloads
               if w.name in names and w.kind == "inference" and w.placements}
    values: dict[str, float] = {x_id(c): 1.0 for c in training.values()}
    for w in baseline.workloads:
        if w.name in serving:
            for p in w.placements:
                for m, n in enumerate(p.monthly_replicas):
                    if 0 <= m - k < spec.horizon_months:
                        values[y_id(p.candidate, m - k)] = float(n)
    for p in baseline.pools:
        if p.pricing in TERM_MONTHS:
            for r in p.reservations:
                if r.start_month - k >= 0:
                    values[res_name(p.site, p.instance, p.pricing, r.start_month - k)] = float(r.nodes)
        elif p.pricing == "purchase" and k == 0:
            values[buy_name(p.site, p.instance)] = float(p.nodes)
    return Kept(training, serving, usd=spec.policy.replan_min_saving_usd if usd is None else usd,
                share=spec.policy.replan_min_saving_share if share is None else share,
                cost={w.name: w.cost_usd for w in baseline.workloads}, values=values)


def _held(site: CloudSite, calendar: Calendar, baseline: Plan, k: int) -> tuple[HeldReservation, ...]:
    """The baseline's reserved terms at `site` that began before the spec's month 0 and still
    run in it, as held commitments: every term the baseline bought, and the terms it held itself
    (its spec's `reserved`) where the spec states none for that pool (where it does, those are
    they)."""
    stated = {(r.instance, r.term) for r in site.reserved}
    out = []
    for p in baseline.pools:
        if p.site != site.name or p.pricing not in TERM_MONTHS:
            continue
        for r in p.reservations:
            began = r.start_month - k
            until = began + TERM_MONTHS[p.pricing]
            if r.start_month < 0 and (p.instance, p.pricing) in stated:
                continue
            if began < 0 < until and r.nodes > 0:
                out.append(HeldReservation(p.instance, r.nodes, until, p.pricing, calendar.name(until),
                                           site.path + ".reserved"))
    return tuple(out)


def _bought(site: OnPremSite, baseline: Plan, k: int, horizon: int, catalog=None) -> tuple[OwnedNodes, ...]:
    """The nodes the baseline bought at a data centre (in its month 0, k months before the
    spec's), as owned nodes bought then (none for a node model the spec states owned nodes of)."""
    stated = {o.instance for o in site.owned}

    def retires(instance: str) -> int | None:
        if catalog is None or instance not in catalog.onprem_nodes:
            return None
        end = unit_costs.life_months(catalog.onprem_nodes[instance]) - k
        return end if end < horizon else None
    return tuple(OwnedNodes(p.instance, p.nodes, baseline.start, retires(p.instance)) for p in baseline.pools
                 if p.site == site.name and p.pricing == "purchase" and p.nodes > 0 and k > 0
                 and p.instance not in stated)
