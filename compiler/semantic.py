"""Semantic checks of a spec: what JSON Schema cannot express (codes E2xx).

These run on the raw data even when the schema found problems, so one run reports
every mistake; each check therefore looks only at values of the right type and
leaves the rest to the schema's own diagnostics.

  E201 duplicate site or workload name
  E202 reference to a site that does not exist (`sites`, `data.home`, `pin.site`)
  E203 pin or site restriction disagrees with the policy
  E204 pinned pricing that the pinned site does not offer
  E205 spot pricing pinned on a workload that is not interruptible, or a cloud pricing on a service
  E206 pinned instance unknown, or at odds with the pinned GPU, site or region
  E207 window outside the planning horizon
  E208 training amount does not fit the model (tokens for LLMs, samples + epochs for vision)
  E209 unknown catalog model
  E210 inference keys that do not fit the model: an LLM's (tokens, TTFT/TPOT, speculative decoding,
       disaggregation, a quantization) on a vision model's service, a vision service's
       latency_p99_ms on an LLM's, or what the model's service needs missing
  E211 unknown GPU (policy.allowed_gpus, quotas, pin.gpu)
  E212 owned hardware that is not a catalog on-prem node model
  E213 placement with no site of the type it needs
  E214 inline model whose figures contradict each other
  E215 cloud site in a region where the catalog prices no instance of its provider
       (a warning instead with allow_unpriced_regions: the site then gets no candidates)
  E216 existing storage at a site smaller than a dataset whose home is that site
  E217 a training job pinned to spot pricing while policy.max_spot_share is below 1
  E218 a commitment already bought (a cloud site's `reserved`) that the catalog does not sell
       in the site's region, whose term cannot reach `until`, or with no `start` to date it
       (a warning where it ended before `start`: it is left out)
  E219 a recurring job (`window.every`) whose period no cron schedule states, whose run's window
       is longer than its period, or that has no whole run inside the horizon
  E220 owned nodes whose `bought` has no `start` to date it, or is after `start` (a warning
       where their useful life ended before `start`: they are left out)
  E221 fp4 (`precision` or `quantization`) on a workload none of whose GPUs has FP4 tensor cores
  E222 a Savings Plan pricing (savings_plan_1y, savings_plan_3y) at a site whose provider the
       catalog sells none for (AWS, Azure), at sites of two providers, or at
       one without on_demand (a Savings Plan covers on-demand usage)
  E223 capacity_block at a site whose provider and region the catalog sells no Capacity Block in,
       or at one without on_demand (a block's instances run as on-demand ones launched into it)
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any, Iterator

from compiler import unit_costs
from compiler.catalog.model import Catalog
from compiler.diagnostics import Diagnostic, Path, did_you_mean
from compiler.plan import MONTH_PATTERN, month_number
from compiler.recurrence import CRON_DAYS, CRON_MONTHS, Period, run_starts
from compiler.resources import schema as load_schema
from compiler.source import Document
from compiler.spec import TERM_MONTHS

DAYS_PER_MONTH = 30.4167  # 365 / 12
# An LLM service's keys, which a vision model's service does not take (E210).
LLM_TRAFFIC_KEYS = ("input_tokens", "output_tokens", "prefix_cache_hit")
LLM_SLO_KEYS = ("ttft_p99_ms", "tpot_p99_ms")
LLM_SERVING_KEYS = ("speculative", "disaggregation")
CLOUD_PRICING = ("on_demand", "spot", "reserved_1y", "reserved_3y")
ONPREM_PRICING = ("owned", "purchase")


def check(doc: Document, data: Any, catalog: Catalog, *,
          allow_unpriced_regions: bool = False) -> list[Diagnostic]:
    """Every semantic diagnostic. `allow_unpriced_regions` makes E215 a warning: a site whose
    region has no price is accepted (it gets no candidates) for a spec written ahead of the
    catalog, e.g. one whose prices come with a later overlay."""
    if not isinstance(data, dict):
        return []
    return list(_Checker(doc, data, catalog, allow_unpriced_regions).run())


def asks_llm_keys_of_vision(d: Diagnostic, data: Any, catalog: Catalog) -> bool:
    """A schema diagnostic (E104) asking a vision model's service for an LLM's tokens or TTFT/TPOT
    bounds: the schema asks them of any service that bounds no slo.latency_p99_ms, since it cannot
    tell the model's family. E210 says what the vision service needs instead, so validation drops it."""
    path = d.path
    if d.code != "E104" or len(path) != 3 or path[0] != "workloads" or path[2] not in ("traffic", "slo"):
        return False
    if "peak_rps" in d.message:       # the traffic's own required key, whatever the model
        return False
    workloads = _list(_dict(data).get("workloads"))
    w = _dict(workloads[path[1]]) if isinstance(path[1], int) and path[1] < len(workloads) else {}
    model = catalog.models.get(w["model"]) if isinstance(w.get("model"), str) else None
    return model is not None and model.family == "vision"


@functools.cache
def _cloud_site_rules() -> tuple[frozenset, re.Pattern]:
    """The providers and the region-name pattern the schema allows (one place for both:
    schemas/spec.schema.json)."""
    keys = load_schema("spec.schema.json")["$defs"]["cloudSite"]["properties"]
    return frozenset(keys["provider"]["enum"]), re.compile(keys["region"]["pattern"])


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _num(v: Any) -> float | None:
    return None if isinstance(v, bool) or not isinstance(v, (int, float)) else float(v)


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def _site_type(site: Any) -> Any:
    """A site's type as placement reads it: an edge site's locations are owned, on-prem sites."""
    kind = _dict(site).get("type")
    return "on_prem" if kind == "edge" else kind


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class _Checker:
    def __init__(self, doc: Document, data: dict, catalog: Catalog,
                 allow_unpriced_regions: bool = False):
        self.doc, self.data, self.catalog = doc, data, catalog
        self.allow_unpriced_regions = allow_unpriced_regions
        self.sites: dict[str, dict] = {}
        for s in _list(data.get("sites")):
            name = _str(_dict(s).get("name"))
            if name is not None:
                self.sites.setdefault(name, s)
        self.policy = _dict(data.get("policy"))
        self.placement = _str(self.policy.get("placement")) or "hybrid"
        allowed = self.policy.get("allowed_gpus")
        self.allowed_gpus = ({g for g in allowed if isinstance(g, str)}
                             if isinstance(allowed, list) else None)

    def diag(self, code: str, path: Path, message: str, hint: str | None = None,
             key: bool = False, severity: str = "error") -> Diagnostic:
        return Diagnostic(code, message, path, self.doc.position(path, key=key), hint, severity)

    def run(self) -> Iterator[Diagnostic]:
        yield from self.unique_names("sites", "site")
        yield from self.unique_names("workloads", "workload")
        yield from self.policy_checks()
        for i, s in enumerate(_list(self.data.get("sites"))):
            if isinstance(s, dict):
                yield from self.site_checks(("sites", i), s)
        for i, w in enumerate(_list(self.data.get("workloads"))):
            if isinstance(w, dict):
                yield from self.workload_checks(("workloads", i), w)

    # ------------------------------------------------------------------ names and references

    def unique_names(self, section: str, what: str) -> Iterator[Diagnostic]:
        first: dict[str, int] = {}
        for i, item in enumerate(_list(self.data.get(section))):
            name = _str(_dict(item).get("name"))
            if name is None:
                continue
            if name in first:
                pos = self.doc.position((section, first[name], "name"))
                where = f" (first at line {pos.line})" if pos else ""
                yield self.diag("E201", (section, i, "name"),
                                f"duplicate {what} name '{name}'{where}",
                                f"every {what} needs its own name")
            else:
                first[name] = i

    def site_ref(self, path: Path, name: Any) -> Iterator[Diagnostic]:
        # With no readable list of sites the schema has said so; no cascade of unknowns.
        if not isinstance(self.data.get("sites"), list):
            return
        if isinstance(name, str) and name not in self.sites:
            hint = did_you_mean(name, self.sites) or (
                "sites are: " + ", ".join(sorted(self.sites)) if self.sites else None)
            yield self.diag("E202", path, f"unknown site '{name}'", hint)

    def gpu_ref(self, path: Path, gpu: Any, key: bool = False) -> Iterator[Diagnostic]:
        if isinstance(gpu, str) and gpu not in self.catalog.gpus:
            hint = did_you_mean(gpu, self.catalog.gpus) or (
                "catalog GPUs: " + ", ".join(sorted(self.catalog.gpus)))
            yield self.diag("E211", path, f"unknown GPU '{gpu}'", hint, key=key)

    # ------------------------------------------------------------------ policy and sites

    def policy_checks(self) -> Iterator[Diagnostic]:
        for i, gpu in enumerate(_list(self.policy.get("allowed_gpus"))):
            yield from self.gpu_ref(("policy", "allowed_gpus", i), gpu)
        if self.placement in ("cloud", "on_prem") and isinstance(self.data.get("sites"), list):
            types = {_site_type(s) for s in self.data["sites"]}
            if self.placement not in types:
                yield self.diag("E213", ("policy", "placement"),
                                f"placement '{self.placement}' needs at least one site of type "
                                f"{self.placement}",
                                "add such a site, or use placement: hybrid")

    def site_checks(self, path: Path, site: dict) -> Iterator[Diagnostic]:
        if site.get("type") == "cloud":
            yield from self.priced_region(path, site)
            yield from self.savings_plan_pricing(path, site)
            yield from self.capacity_block_pricing(path, site)
            for j, held in enumerate(_list(site.get("reserved"))):
                yield from self.held_reservation(path + ("reserved", j), site, _dict(held))
        for gpu in sorted(_dict(site.get("quotas")), key=str):
            yield from self.gpu_ref(path + ("quotas", gpu), gpu, key=True)
        nodes = self.catalog.onprem_nodes
        for j, owned in enumerate(_list(site.get("owned"))):
            inst = _str(_dict(owned).get("instance"))
            if inst is None or inst in nodes:   # an edge box here: edge.py's E230
                continue
            central = sorted(n for n, node in nodes.items() if not node.edge)   # a data centre's models
            if inst in self.catalog.instances:
                hint = (f"'{inst}' is a cloud instance; owned nodes are on-prem node models: "
                        + ", ".join(central))
            else:
                hint = did_you_mean(inst, central) or ("on-prem node models: " + ", ".join(central))
            yield self.diag("E212", path + ("owned", j, "instance"),
                            f"unknown on-prem node model '{inst}'", hint)
        for j, owned in enumerate(_list(site.get("owned"))):
            yield from self.owned_bought(path + ("owned", j), _dict(owned))
        yield from self.existing_storage(path, site)

    def owned_bought(self, path: Path, owned: dict) -> Iterator[Diagnostic]:
        """E220: owned nodes' `bought` is dated by a `start` and not after it; a warning where their
        useful life ended before it."""
        bought, start = _str(owned.get("bought")), _str(self.data.get("start"))
        if bought is None or not re.match(MONTH_PATTERN, bought):
            return      # absent, or the schema says what is wrong with it
        if start is None:
            yield self.diag("E220", path + ("bought",), f"owned nodes bought in {bought}, and the spec has no start",
                            "add `start: YYYY-MM` at the top: the month the plan's month 0 is")
            return
        if not re.match(MONTH_PATTERN, start):
            return
        if month_number(bought) > month_number(start):
            yield self.diag("E220", path + ("bought",), f"owned nodes bought in {bought}, after the plan's start {start}",
                            "nodes bought later are the plan's to decide: leave them out, or move start")
            return
        node = self.catalog.onprem_nodes.get(_str(owned.get("instance")) or "")
        if node is None:
            return
        if unit_costs.life_left(node, bought, start) <= 0:
            yield self.diag("E220", path + ("bought",),
                            f"owned {node.name} nodes bought in {bought} reached the end of their "
                            f"{node.useful_life_years:g}-year useful life before {start}: left out of the plan",
                            "remove the entry, or correct bought", severity="warning")

    def held_reservation(self, path: Path, site: dict, held: dict) -> Iterator[Diagnostic]:
        """E218: a commitment already bought is of an instance sold in the site's region, ends
        within its term after `start`, and is dated by a `start`."""
        inst, provider, region = _str(held.get("instance")), site.get("provider"), site.get("region")
        if inst is not None and isinstance(provider, str) and isinstance(region, str):
            known = self.catalog.instances.get(inst)
            if known is None or known.provider != provider or region not in known.regions:
                yield self.diag("E218", path + ("instance",),
                                f"a reservation of '{inst}' at {region}: the catalog does not sell it there",
                                not_sold_hint(self.catalog, inst, provider, region))
        until, start, term = _str(held.get("until")), _str(self.data.get("start")), held.get("term", "reserved_1y")
        if until is None or not re.match(MONTH_PATTERN, until):
            return      # the schema says what is wrong with it
        if start is None:
            yield self.diag("E218", path + ("until",), f"a reservation held until {until}, and the spec has no start",
                            "add `start: YYYY-MM` at the top: the month the plan's month 0 is")
            return
        if not re.match(MONTH_PATTERN, start) or term not in TERM_MONTHS:
            return
        months = month_number(until) - month_number(start)
        if months <= 0:
            yield self.diag("E218", path + ("until",), f"a reservation held until {until} ended before the "
                            f"plan's start ({start}): it is left out", "delete it from the spec",
                            severity="warning")
        elif months > TERM_MONTHS[term]:
            years = TERM_MONTHS[term] // 12
            yield self.diag("E218", path + ("until",),
                            f"a {years}-year term ({term}) ends at most {TERM_MONTHS[term]} months after the plan's "
                            f"start, and {until} is {months} months after {start}",
                            "set term: reserved_3y" if term == "reserved_1y" and months <= TERM_MONTHS["reserved_3y"]
                            else "check until and term")

    def existing_storage(self, path: Path, site: dict) -> Iterator[Diagnostic]:
        """E216: a dataset lives at its home, so the storage a site says it already has holds
        at least the largest dataset homed there; less contradicts the spec's own data."""
        have = _num(_dict(site.get("storage")).get("existing_tb"))
        name = _str(site.get("name"))
        if have is None or name is None:
            return
        homed = [(_num(_dict(w.get("data")).get("dataset_tb")), _str(w.get("name")))
                 for w in map(_dict, _list(self.data.get("workloads")))
                 if _str(_dict(w.get("data")).get("home")) == name]
        homed = [(tb, wn or "?") for tb, wn in homed if tb is not None]
        if not homed:
            return
        tb, wn = max(homed, key=lambda t: (t[0], t[1]))
        if tb > have + 1e-9:
            yield self.diag("E216", path + ("storage", "existing_tb"),
                            f"site '{name}' already has {_fmt(have)} TB of storage, but workload '{wn}' "
                            f"keeps its {_fmt(tb)} TB dataset there (data.home)",
                            f"raise existing_tb to at least {_fmt(tb)}, or move the dataset's home")

    def savings_plan_pricing(self, path: Path, site: dict) -> Iterator[Diagnostic]:
        """E222: a Savings Plan is sold where the catalog prices one for the site's provider (its
        `savings_plan_estimated_share.<provider>.<term>` factors: AWS Compute Savings Plans, Azure
        savings plan for compute), it covers on-demand usage, so a site that lists one lists
        on_demand too, and one commitment covers one provider's sites, so the sites that list one
        are all of one provider."""
        pricing = site.get("pricing")
        if not isinstance(pricing, list):
            return
        provider = site.get("provider")
        first = _savings_plan_provider(self.data)
        for j, option in enumerate(pricing):
            if option not in unit_costs.SAVINGS_PLAN_MONTHS:
                continue
            sold = sorted({n.split(".")[1] for n in self.catalog.factors
                           if n.startswith("savings_plan_estimated_share.") and n.endswith("." + option)})
            if not isinstance(provider, str) or unit_costs.savings_plan_share(self.catalog, provider, option) is None:
                yield self.diag("E222", path + ("pricing", j),
                                f"pricing '{option}' is a Savings Plan, which the catalog sells for "
                                f"{', '.join(sold) or 'no provider'}; this site's provider is '{provider}'",
                                "drop it, or use reserved_1y / reserved_3y")
            elif "on_demand" not in pricing:
                yield self.diag("E222", path + ("pricing", j),
                                f"pricing '{option}' covers on-demand usage, and this site does not list on_demand",
                                "add on_demand to the site's pricing")
            elif first is not None and provider != first:
                yield self.diag("E222", path + ("pricing", j),
                                f"pricing '{option}' at a '{provider}' site: the spec's Savings Plans are "
                                f"'{first}' ones (an earlier site lists one), and a spec's commitments cover "
                                f"one provider's sites", "list Savings Plans at one provider's sites only")

    def capacity_block_pricing(self, path: Path, site: dict) -> Iterator[Diagnostic]:
        """E223: a Capacity Block is sold for some instances in some regions (the catalog's
        capacity_block_usd_per_hour factors), and its instances run as on-demand ones launched into
        it, so a site that lists capacity_block lists on_demand too."""
        pricing = site.get("pricing")
        if not isinstance(pricing, list) or unit_costs.CAPACITY_BLOCK not in pricing:
            return
        j = pricing.index(unit_costs.CAPACITY_BLOCK)
        prefix = f"capacity_block_usd_per_hour.{site.get('provider')}.{site.get('region')}."
        sold = sorted(k[len(prefix):] for k in self.catalog.factors if k.startswith(prefix))
        if not sold:
            where = sorted({".".join(k.split(".")[1:3]) for k in self.catalog.factors
                            if k.startswith("capacity_block_usd_per_hour.")})
            yield self.diag("E223", path + ("pricing", j),
                            f"the catalog sells no Capacity Block in {site.get('provider')} "
                            f"{site.get('region')}", f"drop capacity_block, or use a region it sells them in: "
                            f"{', '.join(w.replace('.', ' ') for w in where)}")
        elif "on_demand" not in pricing:
            yield self.diag("E223", path + ("pricing", j),
                            "a Capacity Block's instances run as on-demand ones launched into it, and this site "
                            "does not list on_demand", "add on_demand to the site's pricing")

    def priced_region(self, path: Path, site: dict) -> Iterator[Diagnostic]:
        """E215: every candidate of a cloud site is an instance priced in its region, so a region
        the catalog prices nothing in for the provider leaves the site without candidates, and
        without this check nothing would say why."""
        provider, region = site.get("provider"), site.get("region")
        providers, region_name = _cloud_site_rules()
        # A provider or region the schema rejects has its own diagnostic already.
        if not isinstance(provider, str) or provider not in providers or not isinstance(region, str) \
                or not region_name.match(region):
            return
        priced = sorted({p.region for inst in self.catalog.instances.values()
                         if inst.provider == provider for p in inst.prices})
        if region in priced:
            return
        name = _str(site.get("name"))
        who = f"site '{name}'" if name else "this site"
        warn = self.allow_unpriced_regions
        message = (f"the catalog prices no {provider} instance in {region}, so {who} "
                   + ("gets no candidates" if warn else "would get no candidates"))
        # Neighbouring regions differ in one character (eu-central-1, eu-central-2), so only a
        # name that differs in its dashes alone (us-east1 for us-east-1) is taken for a typo.
        close = [r for r in priced if r.replace("-", "") == region.replace("-", "")]
        hint = f"did you mean '{close[0]}'? " if close else ""
        hint += (f"{provider} is priced in: {', '.join(priced)}" if priced
                 else f"the catalog prices no {provider} instance in any region")
        hint += f"; add {region} prices with --catalog FILE"
        if not warn:
            hint += ", or pass --allow-unpriced-regions to accept the site with a warning"
        yield self.diag("E215", path + ("region",), message, hint,
                        severity="warning" if warn else "error")

    # ------------------------------------------------------------------ workloads

    def workload_checks(self, path: Path, w: dict) -> Iterator[Diagnostic]:
        kind = w.get("kind")
        for j, name in enumerate(_list(w.get("sites"))):
            yield from self.site_ref(path + ("sites", j), name)
        yield from self.site_ref(path + ("data", "home"), _dict(w.get("data")).get("home"))
        yield from self.placement_of_sites(path, w)
        family = yield from self.model_checks(path, w)
        if kind == "training":
            yield from self.training_amounts(path, w, family)
        elif kind == "inference":
            yield from self.serving_keys(path, w, family)
        yield from self.window_checks(path, w)
        if isinstance(w.get("pin"), dict):
            yield from self.pin_checks(path, w, w["pin"])
        yield from self.fp4_checks(path, w)

    def fp4_checks(self, path: Path, w: dict) -> Iterator[Diagnostic]:
        """E221: FP4 runs only on tensor cores that have it (Blackwell), so an fp4 workload whose
        GPUs (its pin, policy.allowed_gpus, or what its sites can offer) all lack it has no
        candidate; this names why before the estimate does."""
        key = "precision" if w.get("kind") == "training" else "quantization"
        if w.get(key) != "fp4":
            return
        fp4 = sorted(g.name for g in self.catalog.gpus.values() if g.tflops.get("fp4"))
        pin = _dict(w.get("pin"))
        gpus = self.reachable_gpus(w)
        if isinstance(pin.get("gpu"), str):
            gpus = {pin["gpu"]} & gpus if gpus is not None else {pin["gpu"]}
        elif self.allowed_gpus is not None:
            gpus = self.allowed_gpus & gpus if gpus is not None else set(self.allowed_gpus)
        if gpus is None or any(g in fp4 for g in gpus):
            return
        where = ", ".join(sorted(g for g in gpus if g in self.catalog.gpus)) or "none"
        yield self.diag("E221", path + (key,),
                        f"{key} fp4 needs FP4 tensor cores, which none of this workload's GPUs has "
                        f"(it may use: {where})",
                        f"the catalog's GPUs with an FP4 peak are {', '.join(fp4) or 'none'}: allow one "
                        f"(policy.allowed_gpus, pin.gpu, a site that offers it), or use fp8")

    def reachable_gpus(self, w: dict) -> set[str] | None:
        """The GPUs the workload's sites can offer (priced cloud instances of the site's provider in
        its region, the catalog's on-prem node models), or None where a site is not yet readable."""
        names = [n for n in _list(w.get("sites")) if isinstance(n, str)] or list(self.sites)
        gpus: set[str] = set()
        for name in names:
            site = _dict(self.sites.get(name))
            if site.get("type") == "cloud":
                provider, region = site.get("provider"), site.get("region")
                gpus |= {inst.gpu for inst in self.catalog.instances.values()
                         if inst.provider == provider and any(p.region == region for p in inst.prices)}
            elif site.get("type") == "on_prem":
                gpus |= {node.gpu for node in self.catalog.onprem_nodes.values()}
            else:
                return None
        return gpus

    def placement_of_sites(self, path: Path, w: dict) -> Iterator[Diagnostic]:
        names = [n for n in _list(w.get("sites")) if isinstance(n, str) and n in self.sites]
        if self.placement == "hybrid" or not names:
            return
        if all(_site_type(self.sites[n]) != self.placement for n in names):
            yield self.diag("E203", path + ("sites",),
                            f"none of this workload's sites is of type {self.placement}, "
                            f"as policy.placement '{self.placement}' requires")

    def model_checks(self, path: Path, w: dict):
        """Yields diagnostics; returns the model family (llm | vision) or None if unknown."""
        model = w.get("model")
        mpath = path + ("model",)
        if isinstance(model, dict):
            yield from self.inline_model(mpath, model)
            return "llm"
        if not isinstance(model, str) or not model:
            return None
        known = self.catalog.models.get(model)
        if known is None:
            hint = did_you_mean(model, self.catalog.models) or (
                "use a catalog model (infra-compile catalog) or define it inline with "
                "params_b, layers, hidden, heads, kv_heads, vocab, ffn_hidden, arch")
            yield self.diag("E209", mpath, f"unknown model '{model}'", hint)
            return None
        return known.family

    def inline_model(self, path: Path, m: dict) -> Iterator[Diagnostic]:
        hidden, heads, kv = _int(m.get("hidden")), _int(m.get("heads")), _int(m.get("kv_heads"))
        if hidden and heads and hidden % heads:
            yield self.diag("E214", path + ("hidden",),
                            f"hidden {hidden} is not a multiple of heads {heads}")
        if heads and kv and heads % kv:
            yield self.diag("E214", path + ("kv_heads",),
                            f"heads {heads} is not a multiple of kv_heads {kv}")
        total, active = _num(m.get("params_b")), _num(m.get("active_params_b"))
        if total and active and active > total:
            yield self.diag("E214", path + ("active_params_b",),
                            f"active_params_b {_fmt(active)} exceeds params_b {_fmt(total)}")
        experts, per_token = _int(m.get("experts")), _int(m.get("experts_per_token"))
        if experts and per_token and per_token > experts:
            yield self.diag("E214", path + ("experts_per_token",),
                            f"experts_per_token {per_token} exceeds experts {experts}")
        if m.get("arch") == "dense":
            for k in ("active_params_b", "experts", "experts_per_token"):
                if k in m:
                    yield self.diag("E214", path + (k,), f"'{k}' applies to arch moe only",
                                    "set arch: moe, or remove it", key=True)

    def training_amounts(self, path: Path, w: dict, family: str | None) -> Iterator[Diagnostic]:
        if family is None:
            return
        model = w["model"] if isinstance(w["model"], str) else "this inline model"
        if family == "vision":
            if "tokens" in w:
                yield self.diag("E208", path + ("tokens",),
                                f"'tokens' is for LLM training; '{model}' is a vision model",
                                "give samples and epochs instead", key=True)
            missing = [k for k in ("samples", "epochs") if k not in w]
            if missing:
                yield self.diag("E208", path + ("model",),
                                f"vision training needs {' and '.join(repr(k) for k in missing)}",
                                key=True)
        else:
            for k in ("samples", "epochs"):
                if k in w:
                    yield self.diag("E208", path + (k,),
                                    f"'{k}' is for vision training; {_quote(model)} is an LLM",
                                    "give tokens instead", key=True)
            if "tokens" not in w:
                yield self.diag("E208", path + ("model",), "LLM training needs 'tokens'",
                                "the number of training tokens, e.g. tokens: 2.0e12", key=True)

    def serving_keys(self, path: Path, w: dict, family: str | None) -> Iterator[Diagnostic]:
        """E210: a service states what its model is served by. An LLM's request is tokens in and out,
        bounded by TTFT and TPOT; a vision model's is one image, bounded by its p99 latency
        (slo.latency_p99_ms), at peak_rps images/s. The schema requires an LLM's keys of a service
        that states no latency_p99_ms; which family the model is is the catalog's, so here."""
        if family is None:
            return
        traffic, slo = _dict(w.get("traffic")), _dict(w.get("slo"))
        if family == "vision":
            model = w["model"]
            groups = ((("traffic",), traffic, LLM_TRAFFIC_KEYS,
                       "a vision service's traffic is peak_rps, in images per second (a request is one image)"),
                      (("slo",), slo, LLM_SLO_KEYS,
                       "bound one image's latency instead: slo.latency_p99_ms (each replica batches images within it)"),
                      ((), w, LLM_SERVING_KEYS, "remove it: the vision serving model batches images on one GPU"))
            for where, mapping, keys, hint in groups:
                stated = [k for k in keys if k in mapping]
                if stated:
                    names = " and ".join(f"'{k}'" for k in stated)
                    yield self.diag("E210", path + where + (stated[0],),
                                    f"{names} {'is' if len(stated) == 1 else 'are'} for LLM services; "
                                    f"'{model}' is a vision model", hint, key=True)
            if w.get("quantization") not in (None, "bf16"):
                yield self.diag("E210", path + ("quantization",),
                                f"quantization {w['quantization']} is for LLM services; '{model}' is a vision model, "
                                "served at 16 bits (TensorRT FP16)", "remove it", key=True)
            # (one that states TTFT/TPOT bounds is told to bound the latency instead, above)
            if isinstance(w.get("slo"), dict) and "latency_p99_ms" not in slo and not set(LLM_SLO_KEYS) & set(slo):
                yield self.diag("E210", path + ("slo",), "a vision service needs slo.latency_p99_ms",
                                "one image's p99 latency in ms, e.g. latency_p99_ms: 50", key=True)
            return
        if "latency_p99_ms" in slo:
            model = w["model"] if isinstance(w["model"], str) else "this inline model"
            yield self.diag("E210", path + ("slo", "latency_p99_ms"),
                            f"'latency_p99_ms' is for vision services; {_quote(model)} is an LLM",
                            "bound ttft_p99_ms and tpot_p99_ms instead", key=True)
            # the schema required an LLM's keys only of a service without latency_p99_ms
            for where, mapping, keys in ((("traffic",), traffic, ("input_tokens", "output_tokens")),
                                         (("slo",), slo, ("ttft_p99_ms", "tpot_p99_ms"))):
                missing = [k for k in keys if k not in mapping]
                if missing and isinstance(w.get(where[0]), dict):
                    yield self.diag("E210", path + where,
                                    f"LLM inference needs {' and '.join(repr(k) for k in missing)}", key=True)

    def window_checks(self, path: Path, w: dict) -> Iterator[Diagnostic]:
        horizon = _int(self.data.get("horizon_months"))
        window = _dict(w.get("window"))
        if horizon is None or horizon < 1:
            return
        start = _int(window.get("start_month"))
        if start is not None and start >= horizon:
            yield self.diag("E207", path + ("window", "start_month"),
                            f"start_month {start} is not within the {horizon}-month horizon "
                            f"(0..{horizon - 1})")
            return
        deadline = _num(window.get("deadline_days"))
        if w.get("kind") == "training" and isinstance(window.get("every"), str):
            yield from self.recurring_checks(path, window, start, deadline, horizon)
        elif w.get("kind") == "training" and deadline is not None and deadline > 0:
            start = start if start is not None and start >= 0 else 0
            end = start * DAYS_PER_MONTH + deadline
            limit = horizon * DAYS_PER_MONTH
            if end > limit + 1e-9:
                yield self.diag("E207", path + ("window", "deadline_days"),
                                f"window ends on day {_fmt(round(end, 1))} (start_month {start} + "
                                f"{_fmt(deadline)} days), after the {horizon}-month horizon "
                                f"ends on day {_fmt(round(limit, 1))}",
                                "shorten the deadline or lengthen horizon_months")

    def recurring_checks(self, path: Path, window: dict, start: int | None, deadline: float | None,
                         horizon: int) -> Iterator[Diagnostic]:
        """E219: a recurring job's period is one cron states, each run fits its period, and at
        least one whole run lies inside the horizon."""
        period = Period.parse(window["every"])
        if period is None:
            return          # the schema's pattern reports it
        if not period.cron_states:
            near = (f"every: {'7d' if period.count < 30 else '1mo'}" if period.unit == "d"
                    else f"every: {min(CRON_MONTHS, key=lambda n: (abs(n - period.count), n))}mo")
            yield self.diag("E219", path + ("window", "every"),
                            f"every: {period.text} is not a period one cron schedule states, so its runs "
                            f"would need a launcher each",
                            f"use {', '.join(f'{d}d' for d in CRON_DAYS)} or "
                            f"{', '.join(f'{n}mo' for n in CRON_MONTHS)} (e.g. {near})")
            return
        if deadline is not None and deadline > 0 and deadline > period.days + 1e-9:
            yield self.diag("E219", path + ("window", "deadline_days"),
                            f"each run's window of {_fmt(deadline)} days is longer than its period "
                            f"(every {period.text}, {_fmt(round(period.days, 1))} days): runs would overlap",
                            f"a window of at most {_fmt(round(period.days, 1))} days")
            return
        first = start if start is not None and start >= 0 else 0
        if not run_starts(period, first, deadline if deadline and deadline > 0 else None, horizon):
            yield self.diag("E219", path + ("window", "every"),
                            f"no whole run fits: the first starts in month {first} and its window ends "
                            f"after the {horizon}-month horizon",
                            "start it earlier, shorten deadline_days or lengthen horizon_months")

    # ------------------------------------------------------------------ pins

    def pin_checks(self, path: Path, w: dict, pin: dict) -> Iterator[Diagnostic]:
        ppath = path + ("pin",)
        gpu, site_name = _str(pin.get("gpu")), _str(pin.get("site"))
        pricing, inst_name = _str(pin.get("pricing")), _str(pin.get("instance"))
        yield from self.gpu_ref(ppath + ("gpu",), gpu)
        yield from self.site_ref(ppath + ("site",), site_name)
        site = _dict(self.sites.get(site_name)) if site_name else {}
        site_type = site.get("type")

        # Policy.
        if gpu and self.allowed_gpus is not None and gpu not in self.allowed_gpus \
                and gpu in self.catalog.gpus:
            yield self.diag("E203", ppath + ("gpu",),
                            f"pinned gpu '{gpu}' is not in policy.allowed_gpus")
        if site_type in ("cloud", "on_prem") and self.placement not in ("hybrid", site_type):
            yield self.diag("E203", ppath + ("site",),
                            f"pinned site '{site_name}' is {site_type} but policy.placement "
                            f"is '{self.placement}'")
        restricted = w.get("sites")
        if site and isinstance(restricted, list) and site_name not in restricted:
            yield self.diag("E203", ppath + ("site",),
                            f"pinned site '{site_name}' is not in this workload's sites")

        # Pricing.
        if pricing:
            if site_type == "cloud" and pricing in ONPREM_PRICING:
                yield self.diag("E204", ppath + ("pricing",),
                                f"pricing '{pricing}' is for on_prem sites; '{site_name}' is "
                                "a cloud site")
            elif site_type == "on_prem" and pricing in CLOUD_PRICING:
                yield self.diag("E204", ppath + ("pricing",),
                                f"pricing '{pricing}' is for cloud sites; '{site_name}' is "
                                "on_prem", "use owned or purchase")
            elif site_type == "cloud":
                offered = site.get("pricing", ["on_demand"])
                if isinstance(offered, list) and pricing not in offered:
                    yield self.diag("E204", ppath + ("pricing",),
                                    f"site '{site_name}' does not offer pricing '{pricing}'",
                                    f"add {pricing} to the pricing list of site '{site_name}'")
            if pricing == "spot" and w.get("kind") == "inference":
                yield self.diag("E205", ppath + ("pricing",),
                                "an inference workload cannot be pinned to spot pricing")
            elif pricing in CLOUD_PRICING and w.get("kind") == "inference":
                # A service's replicas share whole nodes with the other services of its pool, and
                # the pool's reserved and on-demand nodes with its jobs: the model prices the pool,
                # not one service's share of it, so such a pin could not be honoured exactly.
                yield self.diag("E205", ppath + ("pricing",),
                                f"an inference workload cannot be pinned to cloud pricing '{pricing}': "
                                "its replicas share the pool's nodes with other services",
                                "pin site and instance; the pool's mix of reserved and on-demand nodes "
                                "is the optimizer's choice")
            elif pricing == "spot" and w.get("interruptible") is not True:
                yield self.diag("E205", ppath + ("pricing",),
                                "pricing 'spot' needs interruptible: true",
                                "spot nodes can be reclaimed; set interruptible: true if the job "
                                "checkpoints and restarts")
            cap = _num(self.policy.get("max_spot_share"))
            if pricing == "spot" and w.get("kind") == "training" and cap is not None and cap < 1:
                # A job runs on one candidate, all on spot or none: a pin to spot runs all of it there.
                yield self.diag("E217", ppath + ("pricing",),
                                f"pricing 'spot' runs the whole job on spot, but policy.max_spot_share "
                                f"is {_fmt(cap)}",
                                "drop the pin's pricing, or raise policy.max_spot_share to 1")

        if inst_name:
            yield from self.pinned_instance(ppath, inst_name, gpu, site_name, site, pricing)

    def pinned_instance(self, ppath: Path, name: str, gpu: str | None, site_name: str | None,
                        site: dict, pricing: str | None) -> Iterator[Diagnostic]:
        ipath = ppath + ("instance",)
        cloud, onprem = self.catalog.instances.get(name), self.catalog.onprem_nodes.get(name)
        if cloud is None and onprem is None:
            choices = list(self.catalog.instances) + list(self.catalog.onprem_nodes)
            yield self.diag("E206", ipath, f"unknown instance '{name}'",
                            did_you_mean(name, choices))
            return
        inst_gpu = cloud.gpu if cloud else onprem.gpu
        if gpu and gpu in self.catalog.gpus and inst_gpu != gpu:
            yield self.diag("E206", ipath,
                            f"instance '{name}' has {inst_gpu} GPUs, but pin.gpu is '{gpu}'")
        if self.allowed_gpus is not None and inst_gpu not in self.allowed_gpus and not gpu:
            yield self.diag("E203", ipath, f"pinned instance '{name}' has {inst_gpu} GPUs, "
                                           "which policy.allowed_gpus does not allow")
        site_type = site.get("type")
        if onprem is not None and site_type == "cloud":
            yield self.diag("E206", ipath, f"'{name}' is an on-prem node model, but site "
                                           f"'{site_name}' is a cloud site")
        elif cloud is not None and site_type == "on_prem":
            yield self.diag("E206", ipath, f"'{name}' is a cloud instance, but site "
                                           f"'{site_name}' is on_prem")
        elif cloud is not None and site_type == "cloud":
            provider, region = site.get("provider"), site.get("region")
            if isinstance(provider, str) and cloud.provider != provider:
                yield self.diag("E206", ipath, f"instance '{name}' is a {cloud.provider} "
                                               f"instance, but site '{site_name}' is {provider}")
            elif isinstance(region, str) and region not in cloud.regions:
                where = ", ".join(sorted(cloud.regions)) or "no region"
                yield self.diag("E206", ipath, f"instance '{name}' has no price in {region}",
                                f"the catalog prices it in: {where}")
            elif pricing in CLOUD_PRICING and isinstance(region, str) \
                    and cloud.price(region, pricing) is None:
                yield self.diag("E206", ipath,
                                f"instance '{name}' has no {pricing} price in {region}")


SHOWN = 8      # names a hint lists before "and N more": enough to choose from, short enough to read


def _listed(names: list[str]) -> str:
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def _area(region: str) -> str:
    """The part of a region's name regions near each other share: eu (eu-central-1), europe, us, asia."""
    return region.split("-", 1)[0]


def not_sold_hint(catalog: Catalog, name: str, provider: str, region: str) -> str:
    """E218's hint for instance `name` held at a `provider` site in `region`, which the catalog
    does not sell there: where the catalog does sell it (nearest first: the regions of the site's
    area, then the rest, each alphabetically) and the instances of the same GPU sold in `region`.
    A name the catalog lacks is taken for a typo: the closest of the provider's instances."""
    here = sorted(n for n, i in catalog.instances.items() if i.provider == provider and region in i.regions)
    inst, guess = catalog.instances.get(name), ""
    if inst is None:
        # as did_you_mean guesses, but the guess is needed as a name
        close = difflib.get_close_matches(name, sorted(n for n, i in catalog.instances.items()
                                                       if i.provider == provider), n=1, cutoff=0.6)
        if not close or close[0] in here:
            # a typo of what the region sells (or no guess): what it sells is the answer
            hint = f"did you mean '{close[0]}'? " if close else ""
            return hint + (f"{provider} instances sold in {region}: {', '.join(here)}" if here
                           else f"the catalog sells no {provider} instance in {region}")
        inst, guess = catalog.instances[close[0]], f"did you mean '{close[0]}'? "
    if inst.provider != provider:
        where = f"{inst.name} is rented from {inst.provider}, not {provider}"
    elif inst.regions:
        regions = sorted(inst.regions, key=lambda r: (_area(r) != _area(region), r))
        where = f"the catalog sells {inst.name} in {_listed(regions)}"
        if len(regions) > SHOWN:
            where += (f" (`infra-compile catalog --provider {provider} --gpu {inst.gpu} --section regions` "
                      "lists them)")
    else:
        where = f"the catalog prices {inst.name} in no region"
    same = [n for n in here if catalog.instances[n].gpu == inst.gpu]
    if same:
        alternative = f"{inst.gpu} instances sold in {region}: {_listed(same)}"
    elif here:
        alternative = f"no {provider} instance with {inst.gpu} is sold in {region}"
    else:
        alternative = f"the catalog sells no {provider} instance in {region}"
    return f"{guess}{where}; {alternative}"


def _quote(model: str) -> str:
    return model if model == "this inline model" else f"'{model}'"


def _savings_plan_provider(data: Any) -> str | None:
    """The provider of the first cloud site listing a Savings Plan term (E222: a spec's plans are
    one provider's)."""
    for s in _list(_dict(data).get("sites")):
        s = _dict(s)
        if s.get("type") == "cloud" and isinstance(s.get("pricing"), list) and any(
                o in unit_costs.SAVINGS_PLAN_MONTHS for o in s["pricing"]):
            return s.get("provider") if isinstance(s.get("provider"), str) else None
    return None
