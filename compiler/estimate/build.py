"""Turn the performance model into Candidates, one workload at a time."""

from __future__ import annotations

import math

from compiler import recurrence, unit_costs
from compiler.candidates import Candidate, Disaggregation, InferenceEstimate, Layout, Rejection, TrainingEstimate
from compiler.catalog.model import Catalog, Model
from compiler.estimate import disaggregated, floors, inference, training
from compiler.estimate.factors import factor, per
from compiler.estimate.layout import describe, inference_tps
from compiler.estimate.memory import model_state_bytes, usable_training_gb, weight_bytes
from compiler.estimate.models import is_moe, resolve_model
from compiler.estimate.options import Hardware, hardware_options, reserved_sold
from compiler.estimate.vision import serving_point, vision_rate
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload, OnPremSite, Slo, Spec, TrainingWorkload



class Memo:
    """The layout and batch searches of one estimate() call, done once per distinct input. Many
    workloads share a model, a GPU and a fabric, and these searches are the stage's hot loop.
    Keyed by the objects' identity; the memo holds the objects, so no id is reused while it lives."""

    def __init__(self) -> None:
        self._done: dict = {}

    def get(self, objs: tuple, values: tuple, work):
        key = (tuple(id(o) for o in objs), values)
        hit = self._done.get(key)
        if hit is None:
            hit = self._done[key] = (objs, work())
        return hit[1]


def _rejected(w, hw: Hardware, reason: str, gpus: int = 0) -> Rejection:
    """Why `w` cannot run on `hw`, with the node's fabric where that is a choice (on-prem)."""
    return Rejection(w.name, hw.site, hw.instance, hw.gpu.name, reason, gpus=gpus,
                     fabric=hw.fabric if hw.site_type != "cloud" else "")


def _no_options(w) -> Rejection:
    """Why `w` has no candidate at all: every site and instance was filtered out before sizing."""
    return Rejection(w.name, "", "", "", "no site and instance pass the placement, site, GPU and pin filters")


def usage(start_month: int, hours: float) -> tuple[tuple[int, float], ...]:
    """Hours run in each month from start_month, 730 hours to a month."""
    out, m, left = [], start_month, hours
    while left > 1e-9:
        h = min(HOURS_PER_MONTH, left)
        out.append((m, round(h, 6)))
        left -= h
        m += 1
    return tuple(out)


def node_cap(spec: Spec, hw: Hardware, catalog: Catalog) -> int:
    """The most whole nodes a job on `hw` could ever hold: max_training_gpus (the largest count the
    performance model is stated for), a cloud quota on the GPU type, an on-prem site's owned nodes
    plus the new nodes its power budget, racks and max_gpus admit. Counts above it are infeasible."""
    cap = int(factor(catalog, "max_training_gpus")) // hw.gpus_per_node
    site = spec.site(hw.site)
    if isinstance(site, CloudSite):
        quota = site.quotas.get(hw.gpu.name)
        if quota is not None:
            cap = min(cap, quota // hw.gpus_per_node)
    elif isinstance(site, OnPremSite):
        node = catalog.onprem_nodes[hw.instance]
        owned = site.owned_nodes(hw.instance)
        new, total = site.nodes_admitted(node.power_kw, node.rack_units, node.gpus)
        cap = min(cap, owned + new, total)
    return max(0, cap)


def node_hours_floor(w: TrainingWorkload, model: Model, hw: Hardware, nodes: int, catalog: Catalog,
                     memo: Memo) -> tuple[float, float] | None:
    """(base, loss): on n >= `nodes` nodes of `hw` the job runs at least base * (1 + loss * n)
    node-hours (so at least base * (1 + loss * n) / n hours), or None.

    node-hours = work / (GPUs per node * peak * MFU) * (1 + lost). MFU on `nodes` or more nodes
    is at most training.mfu_ceiling (LLM) or, for a vision job, its MFU on `nodes` (data
    parallel only: the all-reduce grows with the GPUs, the loader ceiling per GPU does not), and
    never more than the MFU of pure compute (training.compute_mfu); the hardware interruptions
    alone lose a share that grows with the GPUs (training.interruption_loss_per_gpu_hour; spot
    and checkpoint stalls only add)."""
    peak = training.peak_flops(hw.gpu, w.precision)
    if not peak:
        return None
    gpus = nodes * hw.gpus_per_node
    if model.family == "vision":
        work = (w.samples or 0) * (w.epochs or 1) * 3 * (model.gflops_per_sample or 0.0) * 1e9
        mfu_max = per(catalog, "vision_mfu", hw.gpu.name)
        if nodes >= 2:
            r = _vision_rate(model, gpus, hw, w, catalog, memo)
            mfu_max = min(mfu_max, r.mfu) if r else mfu_max
    else:
        work = (w.tokens or 0.0) * training.flops_per_token(model, w.seq_len)
        search = _search(model, hw, w, catalog, memo)
        mfu_max = search.compute_mfu or 0.0
        if nodes >= 2:
            ceiling = search.ceiling(gpus)
            mfu_max = min(mfu_max, ceiling) if ceiling else mfu_max
    if mfu_max <= 0:
        return None
    loss = training.interruption_loss_per_gpu_hour(w.checkpoint.interval_min, catalog) * hw.gpus_per_node
    return work / (hw.gpus_per_node * peak * mfu_max * 3600), loss


def _search(model: Model, hw: Hardware, w: TrainingWorkload, catalog: Catalog, memo: Memo) -> training.LayoutSearch:
    """One training.LayoutSearch per (model, GPU, fabric, sequence length, precision, optimizer):
    node_hours_floor's ceilings and the estimate's best steps on every count share it, and it
    keeps each count's answer. The fabric carries the instance's NVLink domain (GB200 NVL72: 72
    GPUs over 18 four-GPU instances), within which the step model's collectives and parallel
    groups run over NVLink; it is part of the key, so a racked and an unracked instance of the
    same GPU, fabric and node size never share a search."""
    def new() -> training.LayoutSearch:
        fabric = training.Fabric(hw.fabric, hw.node_gbps, hw.gpus_per_node, hw.nvlink_domain)
        return training.LayoutSearch(model, hw.gpu, fabric, w.seq_len, w.precision, w.optimizer, catalog)

    return memo.get((model, hw.gpu, catalog),
                    ("search", hw.fabric, hw.node_gbps, hw.gpus_per_node, hw.nvlink_domain, w.seq_len, w.precision,
                     w.optimizer), new)


def _vision_rate(model: Model, gpus: int, hw: Hardware, w: TrainingWorkload, catalog: Catalog, memo: Memo):
    """vision.vision_rate once per input: node_hours_floor and the estimate ask for the same."""
    return memo.get((model, hw.gpu, catalog), ("vision", gpus, hw.gpus_per_node, hw.vcpus, hw.fabric,
                                               hw.node_gbps, w.precision, w.optimizer),
                    lambda: vision_rate(model, gpus, hw.gpu, hw.gpus_per_node, hw.vcpus, hw.fabric, hw.node_gbps,
                                        w.precision, w.optimizer, catalog))


def wall_time_shares(step: dict[str, float], step_s: float, lost: float) -> tuple[tuple[str, float], ...]:
    """Where the run's wall time goes. duration = ideal * (1 + lost), ideal = steps * step_s, so a
    step term of x seconds is x / step_s / (1 + lost) of the duration and the losses (interruptions,
    restarts, checkpoint stalls) are lost / (1 + lost). Rounded to 4 decimals; they sum to 1."""
    scale = 1 / (step_s * (1 + lost)) if step_s > 0 else 0.0
    return tuple((k, round(v * scale, 4)) for k, v in step.items()) + (("lost", round(lost / (1 + lost), 4)),)


def spot_rate(provider: str, catalog: Catalog) -> float:
    return factor(catalog, f"spot_preemptions_per_node_day.{provider}", "spot_preemptions_per_node_day.default")


def llm_training_estimate(w: TrainingWorkload, model: Model, hw: Hardware, gpus: int, spot: bool,
                          catalog: Catalog, memo: Memo | None = None
                          ) -> tuple[TrainingEstimate | None, Layout | None, str]:
    """(estimate, layout, '') or (None, None, reason). Only the run's length depends on the job's
    tokens: the rest (_step_and_losses) is worked out once per count for every job that shares
    the model, hardware, sequence, precision, optimizer and checkpoint interval (a platform's
    fine-tunes of one model, its recurring jobs)."""
    if training.peak_flops(hw.gpu, w.precision) is None:
        return None, None, f"no {w.precision} tensor cores on {hw.gpu.name}"
    memo = memo or Memo()
    search = _search(model, hw, w, catalog, memo)
    core = memo.get((model, hw.gpu, catalog, search),
                    ("step-losses", hw.provider, gpus, spot, w.checkpoint.interval_min),
                    lambda: _step_and_losses(w, model, hw, gpus, spot, catalog, search))
    if isinstance(core, str):
        return None, None, core
    best, lost, notes, shares = core
    tokens = w.tokens or 0.0
    hours = tokens / best.tokens * best.seconds / 3600 * (1 + lost)
    est = TrainingEstimate(memory_gb_per_gpu=round(best.memory.total_gb, 3), duration_hours=round(hours, 4),
                           mfu=round(best.mfu, 4),
                           tokens_per_s=round(tokens / (hours * 3600), 3) if hours else 0.0,
                           notes=notes, step_breakdown=shares)
    return est, best.layout, ""


def _step_and_losses(w: TrainingWorkload, model: Model, hw: Hardware, gpus: int, spot: bool, catalog: Catalog,
                     search: training.LayoutSearch):
    """What an LLM training estimate on `gpus` GPUs of `hw` is without the job's tokens: (the
    best step, the lost fraction, the notes, the wall-time shares), or why it does not fit."""
    best, leanest = search.best(gpus)
    if best is None:
        need = leanest.memory.total_gb if leanest else float("inf")
        return (f"does not fit on {gpus} GPUs: needs {need:.0f} GB/GPU at best, has "
                f"{usable_training_gb(hw.gpu.memory_gb, catalog):.0f} usable")
    nodes = gpus // hw.gpus_per_node
    state_gb = model_state_bytes(model.params_b * 1e9, w.precision, w.optimizer, catalog) / 1e9
    losses = training.lost_fraction(gpus, nodes, w.checkpoint.interval_min,
                                    spot_rate(hw.provider, catalog) if spot else 0.0, state_gb, catalog)
    lost = losses.fraction
    notes = [f"layout {describe(best.layout)}; step {best.seconds:.2f} s for {best.tokens:,.0f} tokens",
             *losses.notes]
    if best.overhead_share > factor(catalog, "comm_dominates_threshold"):
        notes.append(f"communication dominates: {best.overhead_share:.0%} of each step is communication "
                     f"and pipeline bubble, so more GPUs may not shorten the run")
    return best, lost, tuple(notes), wall_time_shares(best.breakdown(), best.seconds, lost)


def vision_training_estimate(w: TrainingWorkload, model: Model, hw: Hardware, gpus: int, spot: bool,
                             catalog: Catalog, memo: Memo | None = None
                             ) -> tuple[TrainingEstimate | None, Layout | None, str]:
    r = _vision_rate(model, gpus, hw, w, catalog, memo or Memo())
    if r is None:
        return None, None, f"no {w.precision} tensor cores on {hw.gpu.name} (or no FLOPs per sample for {model.name})"
    if r.memory_gb_per_gpu > usable_training_gb(hw.gpu.memory_gb, catalog):
        return None, None, f"does not fit: needs {r.memory_gb_per_gpu:.0f} GB/GPU, has {hw.gpu.memory_gb:.0f}"
    samples = (w.samples or 0) * (w.epochs or 1)
    ideal_h = samples / r.samples_per_s / 3600
    nodes = gpus // hw.gpus_per_node
    state_gb = model_state_bytes(model.params_b * 1e9, w.precision, w.optimizer, catalog) / 1e9
    losses = training.lost_fraction(gpus, nodes, w.checkpoint.interval_min,
                                    spot_rate(hw.provider, catalog) if spot else 0.0, state_gb, catalog)
    lost, notes = losses.fraction, list(losses.notes)
    hours = ideal_h * (1 + lost)
    if r.loader_bound:
        notes.insert(0, f"data loading bound: {hw.vcpus // hw.gpus_per_node} vCPUs per GPU")
    if r.overhead_share > factor(catalog, "comm_dominates_threshold"):
        notes.append(f"communication dominates: {r.overhead_share:.0%} of each step")
    est = TrainingEstimate(memory_gb_per_gpu=round(r.memory_gb_per_gpu, 3), duration_hours=round(hours, 4),
                           mfu=round(r.mfu, 4), samples_per_s=round(samples / (hours * 3600), 3),
                           notes=tuple(notes),
                           step_breakdown=wall_time_shares(r.breakdown(), r.step_s, lost))
    return est, Layout(dp=gpus), ""


class _Totals:
    """The counts a scan has found on one pool where node-hours are compared in total, as (k months
    run inside the horizon, node-hours there), and a test that a larger count is dominated by one
    of them without estimating it (optimize/reductions.py: d dominates c on such a pool when
    n_d <= n_c, d runs no month c does not and no more node-hours in total).

    A count n above every found one runs at least T_lb node-hours (node_hours_floor), so at least
    D_lb = T_lb / n hours: at least k_lb = min(ceil(D_lb / 730), months visible) months and
    n * min(D_lb, 730 * months visible) node-hours inside the horizon. A found (k, T) with
    k <= k_lb and T strictly below that dominates it, and whatever it would have dominated, so
    prune keeps the same candidates: skipping it changes nothing the model sees."""

    def __init__(self) -> None:
        self.found: list[tuple[int, float]] = []   # (k, T), k increasing, T decreasing (a front)

    def add(self, k: int, total: float) -> None:
        if any(k0 <= k and t0 <= total for k0, t0 in self.found):
            return
        self.found = sorted([(k0, t0) for k0, t0 in self.found if not (k <= k0 and total <= t0)] + [(k, total)])

    def dominate(self, nodes: int, node_hours_lb: float, visible: int) -> bool:
        if not self.found or visible <= 0:
            return False
        hours_lb = node_hours_lb / nodes
        k_lb = min(visible, max(1, math.ceil(hours_lb / HOURS_PER_MONTH - 1e-6)))
        total_lb = nodes * min(hours_lb, HOURS_PER_MONTH * visible)
        return any(k <= k_lb and t < total_lb for k, t in self.found)


OVER_CEILING = "a plan found for the whole spec costs less than that plus the other workloads' least costs"


def sample_counts(cap: int, owned: int = 0) -> list[int]:
    """A sparse ladder of node counts up to `cap` for a first plan (pipeline.compile_spec): every
    count to 8, then about 25% apart, the cap, and the owned nodes (filling them is often best)."""
    out, n = set(range(1, 9)), 8.0
    while n < cap:
        n *= 1.25
        out.add(int(round(n)))
    out |= {cap, owned}
    return sorted(x for x in out if 1 <= x <= cap)


def training_candidates(spec: Spec, w: TrainingWorkload, catalog: Catalog, memo: Memo | None = None,
                        sample: bool = False, ceiling: float | None = None):
    """Every count of every option, reduced only where exact (docs/optimizer.md). `sample`: the
    counts of sample_counts only (a first plan's, not a model's). `ceiling`: counts whose own cost
    floor (own(c) in floors.py: its node-hours at its pool's least rate, plus egress) passes it
    are in no optimal plan and are dropped."""
    model = resolve_model(w.model, catalog)
    if model is None:
        return [], [Rejection(w.name, "", "", "", f"unknown model {w.model_name!r}")]
    memo = memo or Memo()
    cands: list[Candidate] = []
    rejs: list[Rejection] = []
    options = hardware_options(spec, w, catalog)
    if not options:
        rejs.append(_no_options(w))
    pin = w.pin
    period, starts = recurrence.of(w.window, spec.horizon_months) or (None, ())
    if period is not None:      # a recurring job: each run within its own window
        limit_h = recurrence.window_hours(period, w.window.deadline_days)
        limit_what = f"each run's {limit_h / 24:g}-day window"
    elif w.window.deadline_days is not None:
        limit_h, limit_what = w.window.deadline_days * 24, f"the {w.window.deadline_days:g}-day deadline"
    else:
        limit_h, limit_what = (spec.horizon_months - w.window.start_month) * HOURS_PER_MONTH, "the horizon"
    estimate_fn = vision_training_estimate if model.family == "vision" else llm_training_estimate
    # A pool's capacity, reserved hours and cloud share make every count a possible choice, so the
    # counts are every whole number of nodes, 1 up to node_cap. The scan stops early only where
    # the larger counts are provably dominated (docs/optimizer.md, "Exact reductions"): once a
    # count finishes inside its first month, a larger count is dominated by it unless it runs
    # fewer node-hours, and node_hours_floor bounds those from below.
    for hw in options:
        variants = [False] + ([True] if w.interruptible and hw.spot_usd_h is not None else [])
        if pin and pin.pricing:
            variants = [s for s in variants if s == (pin.pricing == "spot")]
        cap = node_cap(spec, hw, catalog)
        if pin and pin.gpus:
            if pin.gpus % hw.gpus_per_node:
                rejs.append(_rejected(w, hw,
                                      f"pin.gpus={pin.gpus} is not a whole number of {hw.gpus_per_node}-GPU nodes",
                                      gpus=pin.gpus))
                continue
            counts = [pin.gpus // hw.gpus_per_node]
        elif sample:
            counts = sample_counts(cap, spec.site(hw.site).owned_nodes(hw.instance)
                                   if hw.site_type == "on_prem" else 0)
        else:
            counts = range(1, cap + 1)
        # With a cloud-share cap a dearer on-prem choice can be what satisfies it: no early stop.
        may_stop = not (spec.policy.caps_cloud_share and hw.site_type == "on_prem")
        site = spec.site(hw.site)
        by_month = isinstance(site, CloudSite) and reserved_sold(site, hw.instance, catalog)
        # a Capacity Block is priced by whole days (weeks beyond two): fewer node-hours can cost
        # more there, so no count of a pool selling blocks is dominated by node-hours alone
        blocks = isinstance(site, CloudSite) and unit_costs.capacity_block_rate(catalog, site, hw.instance) is not None
        visible = spec.horizon_months - w.window.start_month   # months of the run the plan prices
        # Counts below `fit` fit no layout (training.fewest_gpus_to_fit): their rejection reason
        # is only worked out if it is the one reported. Its shapes are the layout search's, whose
        # "node" is the NVLink domain (training.Fabric.domain): a GB200 job's tensor parallelism may
        # span its rack's instances, so the bound reads the domain, not the instance's GPUs.
        domain = max(hw.nvlink_domain, hw.gpus_per_node)
        fit = 0.0 if model.family == "vision" else memo.get(
            (model, hw.gpu, catalog), ("fit", domain, w.seq_len, w.precision, w.optimizer),
            lambda: training.fewest_gpus_to_fit(model, domain, hw.gpu, w.seq_len, w.precision,
                                                w.optimizer, catalog))
        away = floors.egress(spec, w, hw.site, catalog)
        for spot in variants:
            found, reason, tried, record, check_at = 0, "", 0, math.inf, 0
            rate = floors.node_hour_rate(spec, hw.site, hw.instance, spot, catalog)
            # Counts found so far, (months, node-hours) inside the horizon, where node-hours are
            # compared in total (on-prem, spot, cloud pools without reserved terms): _Totals.
            stop = may_stop and not (blocks and not spot)
            totals = _Totals() if stop and not (by_month and not spot) else None
            floor = None
            for nodes in counts:
                gpus = nodes * hw.gpus_per_node
                if nodes >= check_at and len(counts) > 1:
                    floor = node_hours_floor(w, model, hw, nodes, catalog, memo)
                    if floor is not None:
                        base, loss = floor
                        if base * (1 + loss * cap) / cap * (1 - 1e-6) > limit_h:
                            reason = (f"misses {limit_what} on every count up to {cap * hw.gpus_per_node} GPUs "
                                      f"(at least {base * (1 + loss * cap) / cap / 24:.1f} days)")
                            break  # no count from here to the cap finishes in time
                        if stop and base * (1 + loss * nodes) * (1 - 1e-6) > record:
                            break  # every larger count is dominated by the record
                    check_at = max(nodes + 1, int(nodes * 1.05))   # the bound costs a layout search
                if floor is not None:
                    node_hours = floor[0] * (1 + floor[1] * nodes)     # this count runs at least these
                    if ceiling is not None:
                        least = rate * min(node_hours, HOURS_PER_MONTH * visible * nodes) + away
                        if least > ceiling:
                            reason = (f"costs at least ${least:,.0f} from {nodes * hw.gpus_per_node} GPUs up, over "
                                      f"${ceiling:,.0f}: {OVER_CEILING}")
                            break   # the floor only grows with the count
                    if totals is not None and totals.dominate(nodes, node_hours, visible):
                        continue
                    if node_hours / nodes > limit_h * (1 + 1e-6) + 1e-3:
                        # finishes too late whatever its layout: not estimated. Never the last count
                        # tried where none is in time: at the cap this floor would have ended the scan.
                        continue
                tried = gpus
                if gpus < fit * (1 - 1e-9):
                    reason = None   # does not fit: estimate_fn says how much memory it needs
                    continue
                est, layout, why = estimate_fn(w, model, hw, gpus, spot, catalog, memo)
                if est is None:
                    reason = why
                    if why.startswith("no "):
                        break      # no size will help
                    continue       # more GPUs shard more
                if est.duration_hours > limit_h:
                    reason = (f"misses {limit_what}: {est.duration_hours / 24:.1f} days on {gpus} GPUs "
                              f"(limit {limit_h / 24:.1f})")
                    continue
                use = (usage(w.window.start_month, est.duration_hours) if period is None
                       else recurrence.usage(starts, est.duration_hours))
                run = [h for m, h in use if h > 0 and m < spec.horizon_months]
                if ceiling is not None and rate * nodes * sum(run) + away > ceiling:
                    reason = (f"costs at least ${rate * nodes * sum(run) + away:,.0f} on {gpus} GPUs, over "
                              f"${ceiling:,.0f}: {OVER_CEILING}")
                    continue
                cands.append(Candidate(
                    id=f"{w.name}/{hw.site}/{hw.label}/{gpus}g/{'spot' if spot else 'od'}",
                    workload=w.name, kind="training", site=hw.site, site_type=hw.site_type,
                    instance=hw.instance, gpu=hw.gpu.name, gpus_per_node=hw.gpus_per_node, gpus=gpus,
                    nodes=nodes, layout=layout, fabric=hw.fabric, spot=spot,
                    estimate=est, start_month=w.window.start_month, usage=use))
                found += 1
                # every run inside the month it starts in: each larger count runs the same months
                if est.duration_hours <= HOURS_PER_MONTH if period is not None else len(use) == 1:
                    record = min(record, nodes * est.duration_hours)
                if totals is not None:
                    totals.add(len(run), nodes * sum(run))
            if not found:
                if reason is None:
                    reason = estimate_fn(w, model, hw, tried, spot, catalog, memo)[2]
                if not counts:
                    reason = f"no node of {hw.label} fits the site's limits (power, racks, quota, max_gpus)"
                rejs.append(_rejected(w, hw,
                                      (reason or "no GPU count to try") + (" (spot)" if spot else ""), gpus=tried))
    return cands, rejs


def headroom_note(slo: Slo) -> str:
    """What a rejection against the sized bounds adds where the service keeps headroom: the SLO it
    names is the spec's bound x (1 - headroom), not the bound as stated."""
    if not slo.headroom:
        return ""
    return f" (the SLO's bounds less its {slo.headroom * 100:g}% headroom: slo.headroom)"


def inference_candidates(spec: Spec, w: InferenceWorkload, catalog: Catalog, memo: Memo | None = None):
    model = resolve_model(w.model, catalog)
    if model is None:
        return [], [Rejection(w.name, "", "", "", f"unknown model {w.model_name!r}")]
    if model.family == "vision" and w.vision:
        return vision_candidates(spec, w, model, catalog, memo or Memo())
    if model.family != "llm" or w.vision:
        what = "a vision model" if model.family == "vision" else "an LLM"
        return [], [Rejection(w.name, "", "", "", f"{model.name} is {what}; the service's traffic and SLO are "
                                                  f"{'a vision' if w.vision else 'an LLM'} service's")]
    cands: list[Candidate] = []
    rejs: list[Rejection] = []
    options = hardware_options(spec, w, catalog)
    if not options:
        rejs.append(_no_options(w))
    tr, slo = w.traffic, w.slo
    # Replicas are sized to the bounds less the service's headroom (Slo.headroom): its batch is the
    # largest that meets bound x (1 - headroom) on both, so the bounds themselves keep that share free.
    ttft, tpot = slo.ttft_sized_ms, slo.tpot_sized_ms
    serving = inference.Serving.of(w)
    memo = memo or Memo()
    for hw in options:
        tps = inference_tps(hw.gpus_per_node)
        if w.pin and w.pin.gpus:
            tps = [t for t in tps if t == w.pin.gpus]
            if not tps:
                rejs.append(_rejected(w, hw,
                                      f"pin.gpus={w.pin.gpus} is not a tensor-parallel size (1, 2, 4, 8) "
                                      f"within a {hw.gpus_per_node}-GPU node", gpus=w.pin.gpus))
        if w.disaggregation in ("allowed", "required"):
            cands += _disaggregated(w, model, hw, serving, catalog, memo, rejs)
        if w.disaggregation == "required":
            continue
        layouts = [(t, ep) for t in tps for ep in serving_layouts(model, hw, t)]
        wide = [] if w.pin and w.pin.gpus else [(t, True) for t in wide_ep_degrees(model, hw)]
        fabric = wide_ep_fabric(hw, catalog)
        best_per_gpu: dict[int, tuple[float, str]] = {}   # GPUs of a replica -> its best tokens/s a GPU, layout
        for t, ep in layouts + wide:
            far = fabric if t > hw.gpus_per_node else None
            pt, why = memo.get((model, hw.gpu, catalog), (t, w.quantization, tr.input_tokens, tr.output_tokens,
                                                          ttft, tpot, serving, ep, far),
                               lambda: inference.best_batch(model, hw.gpu, t, w.quantization, tr.input_tokens,
                                                            tr.output_tokens, ttft, tpot, catalog, serving, ep=ep,
                                                            fabric=far))
            if pt is None:
                rejs.append(_rejected(w, hw, why + headroom_note(slo), gpus=t))
                continue
            layout_name = f"dp{t}-ep{t}" if ep else f"tp{t}"
            if t > hw.gpus_per_node:
                # Wide expert parallelism is a candidate only where it pays per GPU: a narrower layout
                # whose replica size divides t and carries at least as many tokens/s a GPU serves the
                # same GPUs better (t / its size replicas of it hold the same nodes).
                rate = pt.tokens_per_s / t
                beaten = [(r, name) for g, (r, name) in best_per_gpu.items() if t % g == 0 and r >= rate]
                if beaten:
                    r, name = max(beaten)
                    rejs.append(_rejected(w, hw, f"wide expert parallel dp{t}-ep{t} does not pay: {rate:,.0f} "
                                                 f"tokens/s a GPU against {r:,.0f} at {name}", gpus=t))
                    continue
            if pt.tokens_per_s / t > best_per_gpu.get(t, (0.0, ""))[0]:
                best_per_gpu[t] = (pt.tokens_per_s / t, layout_name)
            where = (f"over {t // hw.gpus_per_node} nodes of {hw.gpus_per_node}"
                     + (" in one NVLink domain" if t <= fabric.domain else f", all-to-alls over {hw.fabric}")
                     if t > hw.gpus_per_node else f"over the {t} GPUs")
            notes = ((f"attention data parallel x {t}, experts expert parallel {where}; " if ep else "")
                     + f"batch {pt.batch}: decode step {pt.decode_ms:.1f} ms, prefill {pt.prefill_ms:.0f} ms "
                       f"per request",)
            est = InferenceEstimate(memory_gb_per_gpu=round(pt.memory_gb_per_gpu, 3),
                                    tokens_per_s=round(pt.tokens_per_s, 3), ttft_ms=round(pt.ttft_ms, 3),
                                    tpot_ms=round(pt.tpot_ms, 3), batch=pt.batch, notes=notes,
                                    weights_gb=round(weight_bytes(model.params_b * 1e9, w.quantization,
                                                                  catalog) / 1e9, 3))
            cands.append(Candidate(
                id=f"{w.name}/{hw.site}/{hw.label}/{layout_name}", workload=w.name,
                kind="inference", site=hw.site, site_type=hw.site_type, instance=hw.instance, gpu=hw.gpu.name,
                gpus_per_node=hw.gpus_per_node, gpus=t, nodes=0,
                layout=Layout(tp=1, dp=t, ep=t) if ep else Layout(tp=t), fabric=hw.fabric,
                spot=False, estimate=est, start_month=w.window.start_month, usage=()))
    return cands, rejs


def vision_candidates(spec: Spec, w: InferenceWorkload, model: Model, catalog: Catalog,
                      memo: Memo) -> tuple[list[Candidate], list[Rejection]]:
    """A vision model's service (docs/performance-model.md, "Vision serving"): one replica is one
    GPU batching images (Triton's dynamic batcher), at the largest batch whose latency meets
    slo.latency_p99_ms; its capacity, images/s, is InferenceEstimate.tokens_per_s, the figure
    the demand rows read (the service's demand is images/s: spec.ImageTraffic). A GPU on which
    one image misses the bound, or for which compiler/serving_stack.yaml lists no Triton image
    (the server the render writes), is rejected with why."""
    from compiler.serving_stack import serving_stack

    triton = serving_stack().triton
    cands: list[Candidate] = []
    rejs: list[Rejection] = []
    options = hardware_options(spec, w, catalog)
    if not options:
        rejs.append(_no_options(w))
    bound = w.slo.latency_sized_ms or 0.0       # the latency bound less the service's headroom
    weights_gb = round(model.params_b * 1e9 * 2 / 1e9, 3)      # 16-bit weights (TensorRT FP16)
    for hw in options:
        if w.pin and w.pin.gpus and w.pin.gpus != 1:
            rejs.append(_rejected(w, hw, f"pin.gpus={w.pin.gpus}: a vision replica is one GPU", gpus=w.pin.gpus))
            continue
        if triton.image_for(hw.gpu) is None:
            rejs.append(_rejected(w, hw, f"no Triton Inference Server image runs on {hw.gpu.name} "
                                         f"({hw.gpu.architecture or 'no architecture named'}): the vision server is "
                                         "NVIDIA's CUDA build (compiler/serving_stack.yaml)", gpus=1))
            continue
        pt, why = memo.get((model, hw.gpu, catalog), ("vision-serving", bound),
                           lambda: serving_point(model, hw.gpu, bound, catalog))
        if pt is None:
            rejs.append(_rejected(w, hw, why + headroom_note(w.slo), gpus=1))
            continue
        notes = (f"batch {pt.batch}: {pt.latency_ms:.1f} ms a batch ({pt.per_image_ms:.3f} ms an image), "
                 f"{pt.images_per_s:,.0f} images/s a GPU",)
        est = InferenceEstimate(memory_gb_per_gpu=weights_gb, tokens_per_s=round(pt.images_per_s, 3),
                                ttft_ms=None, tpot_ms=None, batch=pt.batch, notes=notes, weights_gb=weights_gb,
                                latency_ms=round(pt.latency_ms, 3))
        cands.append(Candidate(
            id=f"{w.name}/{hw.site}/{hw.label}/tp1", workload=w.name, kind="inference",
            site=hw.site, site_type=hw.site_type, instance=hw.instance, gpu=hw.gpu.name,
            gpus_per_node=hw.gpus_per_node, gpus=1, nodes=0, layout=Layout(tp=1), fabric=hw.fabric,
            spot=False, estimate=est, start_month=w.window.start_month, usage=()))
    return cands, rejs


# The first vLLM release whose server runs attention data parallel with expert parallel MoE layers
# as the render asks (--data-parallel-size t --enable-expert-parallel: vLLM v0.10.1.1's "Expert
# Parallel Deployment" and "Data Parallel Deployment" guides), on its CUDA builds.
VLLM_EXPERT_PARALLEL = (0, 10)


def serving_layouts(model: Model, hw: Hardware, t: int) -> tuple[bool, ...]:
    """The layouts a replica of t GPUs is sized at: tensor parallel (False) always; for an MoE model
    on t > 1 GPUs whose serving image runs vLLM 0.10+ on CUDA, also attention data parallel with the
    experts expert parallel (True; inference.expert_parallel_step_s). The solver takes the cheaper."""
    image = hw.gpu.serving
    eligible = (t > 1 and is_moe(model) and image is not None and image.runtime.startswith("CUDA")
                and image.vllm[:2] >= VLLM_EXPERT_PARALLEL)
    return (False, True) if eligible else (False,)


# Expert-parallel widths over whole nodes (wide EP: DeepSeek's EP144, SGLang's EP72, llm-d's DP16, the
# EP16-EP72 of TensorRT-LLM's wide-EP runs on a GB200 NVL72 rack): a replica of t GPUs on t / GPUs-per-node
# nodes, each GPU one attention data-parallel rank holding ceil(E / t) experts.
WIDE_EP_DEGREES = (8, 16, 32, 64, 72)
# The first vLLM release with dual-batch overlap (--enable-dbo: vllm-project/vllm#23693, merged September
# 2025, after v0.10.2): its wide-EP decode hides the all-to-alls behind a second micro-batch
# (inference.ScaleOut.dual_batch); the catalog's v0.10.1.1 images hide none.
VLLM_DUAL_BATCH = (0, 11)


def wide_ep_degrees(model: Model, hw: Hardware) -> tuple[int, ...]:
    """The widths a wide expert-parallel replica of `model` on `hw` is sized at: WIDE_EP_DEGREES above
    one node, in whole nodes, at most the model's experts (each GPU at least one), and reachable: within
    the instance's NVLink domain where it has one beyond the node (a GB200 NVL72 rack's 72), else over
    a scale-out fabric between the nodes. None for a model or image the in-node layout does not run
    (serving_layouts)."""
    if True not in serving_layouts(model, hw, max(2, hw.gpus_per_node)):
        return ()
    reach = hw.nvlink_domain if hw.nvlink_domain > hw.gpus_per_node else (
        max(WIDE_EP_DEGREES) if hw.node_gbps > 0 else 0)
    return tuple(t for t in WIDE_EP_DEGREES if hw.gpus_per_node < t <= reach and t % hw.gpus_per_node == 0
                 and t <= (model.experts or 0))


def wide_ep_fabric(hw: Hardware, catalog: Catalog) -> inference.ScaleOut:
    """The network a wide expert-parallel replica on `hw` runs its all-to-alls over (inference.ScaleOut):
    its NVLink domain, each GPU's rail of the node's scale-out bandwidth, and whether the image's vLLM
    overlaps them with a second micro-batch."""
    image = hw.gpu.serving
    dual = image is not None and image.vllm[:2] >= VLLM_DUAL_BATCH
    return inference.ScaleOut.of(hw.node_gbps, hw.gpus_per_node, hw.fabric, hw.nvlink_domain, catalog, dual)


# The first vLLM release the render gives a disaggregated service (its NixlConnector, the
# KV-transfer connector llm-d's P/D guides run; docs/artifacts.md).
VLLM_DISAGGREGATED = (0, 10)
# Its decode servers read a prefill server's KV cache rank by rank: vLLM 0.10's NixlConnector
# refuses a decode tensor parallel below the prefill's ("Decode TP cannot be smaller than prefill
# TP"; heterogeneous TP, vllm-project/vllm#18833; prefill above decode came later, #27274).


def _disaggregated(w: InferenceWorkload, model: Model, hw: Hardware, serving: inference.Serving,
                   catalog: Catalog, memo: Memo, rejs: list[Rejection]) -> list[Candidate]:
    """The disaggregated units of `w` on `hw` (docs/performance-model.md, "Disaggregated prefill and
    decode"): one per (prefill tp, decode tp) that meets the SLO; a pin on the GPUs keeps none."""
    image = hw.gpu.serving
    if image is None or not image.runtime.startswith("CUDA") or image.vllm[:2] < VLLM_DISAGGREGATED:
        ref = f"{image.ref} (vLLM {'.'.join(map(str, image.vllm)) or '?'})" if image else "no serving image"
        rejs.append(_rejected(w, hw, f"disaggregated: the {hw.gpu.name} serving image is {ref}; the KV transfer "
                                     "needs vLLM 0.10 or later on CUDA (an overlay may name a newer image)"))
        return []
    if w.pin and w.pin.gpus:
        return []
    tr, slo = w.traffic, w.slo
    ttft, tpot = slo.ttft_sized_ms, slo.tpot_sized_ms      # the bounds less the headroom, as colocated
    out: list[Candidate] = []
    tps = inference_tps(hw.gpus_per_node)
    for a in tps:
        for b in tps:
            if b < a:
                rejs.append(_rejected(w, hw, f"disaggregated prefill tp{a}, decode tp{b}: vLLM's NixlConnector "
                                             "(vLLM 0.10) needs the decode tensor parallel at least the prefill's",
                                      gpus=a + b))
                continue
            u, why = memo.get((model, hw.gpu, catalog),
                              ("pd", a, b, w.quantization, tr.input_tokens, tr.output_tokens, ttft, tpot,
                               hw.gpus_per_node, hw.node_gbps, hw.fabric, serving),
                              lambda: disaggregated.unit(model, hw.gpu, a, b, w.quantization, tr.input_tokens,
                                                         tr.output_tokens, ttft, tpot, hw.gpus_per_node,
                                                         hw.node_gbps, hw.fabric, catalog, serving))
            if u is None:
                rejs.append(_rejected(w, hw, f"disaggregated prefill tp{a}, decode tp{b}: {why}{headroom_note(slo)}",
                                      gpus=a + b))
                continue
            pd = Disaggregation(a, u.prefill_instances, b, u.decode_instances, round(u.prefill.prefill_ms, 3),
                                round(u.prefill.transfer_ms, 3))
            notes = (f"disaggregated: {u.prefill_instances} prefill x tp{a} ({u.prefill.prefill_ms:.0f} ms a prompt, "
                     f"KV transfer {u.prefill.transfer_ms:.0f} ms) + {u.decode_instances} decode x tp{b} "
                     f"(batch {u.decode.batch}, step {u.decode.step_ms:.1f} ms)",)
            est = InferenceEstimate(memory_gb_per_gpu=round(max(u.prefill.memory_gb_per_gpu,
                                                                u.decode.memory_gb_per_gpu), 3),
                                    tokens_per_s=round(u.tokens_per_s, 3), ttft_ms=round(u.ttft_ms, 3),
                                    tpot_ms=round(u.tpot_ms, 3), batch=u.decode.batch, notes=notes,
                                    weights_gb=round(weight_bytes(model.params_b * 1e9, w.quantization,
                                                                  catalog) / 1e9, 3),
                                    disaggregation=pd)
            out.append(Candidate(
                id=f"{w.name}/{hw.site}/{hw.label}/pd-p{u.prefill_instances}tp{a}-d{u.decode_instances}tp{b}",
                workload=w.name, kind="inference", site=hw.site, site_type=hw.site_type, instance=hw.instance,
                gpu=hw.gpu.name, gpus_per_node=hw.gpus_per_node, gpus=pd.gpus, nodes=0, layout=Layout(tp=b),
                fabric=hw.fabric, spot=False, estimate=est, start_month=w.window.start_month, usage=()))
    return out
