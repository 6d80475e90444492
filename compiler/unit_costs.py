"""Unit costs, read from the catalog (every figure there has a source): the estimate and optimize
stages both price with them, so neither imports the other for it.

All money is USD over the planning horizon; hours are 730 to a month (HOURS_PER_MONTH).

- Cloud node-hour: the instance's price in the site's region for a pricing option.
- Commitments that outlive the horizon (a reserved term, a bought node's useful life) are priced
  by one rule, the spec's policy.after_horizon (docs/optimizer.md, "Commitments that outlive the
  horizon"): `prorated` (the default) pays the months inside the horizon only (a bought node's
  life counted from month 0); `full` pays every month of the term and the whole purchase price;
  `continues` pays the months inside the horizon here and the months after it only for the
  nodes the last month's load leaves idle (formulate's rows (16)).
- On-prem node, bought: its capex by that rule, plus support for the horizon. Owned: neither.
- Power: node-hours run * kW per node * PUE * $/kWh (owned and bought alike).
- Fabric, per bought on-prem node: ports * cost per port plus its share of a two-tier
  leaf/spine tree (each leaf spends half its radix on nodes and half on uplinks; spines
  take the uplinks: 1.5 switches per radix/2 node ports = 3 * ports / radix switches).
- Storage: $/TB-month (cloud) or capex per TB + $/TB-month (on-prem), per tier.
- Egress: dataset GB * $/GB of the provider at the data's home when a workload runs away.
"""

from __future__ import annotations

import math

from compiler.catalog.model import Catalog, Fabric, OnPremNode, StorageTier
from compiler.plan import month_number
from compiler.spec import TERM_MONTHS, CloudSite, OnPremSite
CLOUD_TIER_BY_PROVIDER = {"aws": ("fsx-lustre",), "gcp": ("filestore", "parallelstore"),
                          "azure": ("managed-lustre",), "on_prem": ("onprem-nfs", "onprem-lustre")}


def provider_of(site) -> str:
    return site.provider if isinstance(site, CloudSite) else "on_prem"


def cloud_price(catalog: Catalog, site: CloudSite, instance: str, option: str) -> float | None:
    """USD per node-hour, or None when the option is not sold there or not allowed by the spec."""
    if option not in site.pricing:
        return None
    inst = catalog.instances.get(instance)
    return None if inst is None else inst.price(site.region, option)


# Months a Savings Plan's commitment runs (AWS Compute Savings Plans, No Upfront; Azure savings plan for
# compute; docs/savings-plans.md).
SAVINGS_PLAN_MONTHS = {"savings_plan_1y": 12, "savings_plan_3y": 36}


def savings_plan_share(catalog: Catalog, provider: str, term: str) -> float | None:
    """A Savings Plan's rate as a share of the on-demand rate (the catalog's estimated factor), or
    None where the catalog has none for the provider."""
    f = catalog.factors.get(f"savings_plan_estimated_share.{provider}.{term}")
    return None if f is None else float(f.value)


def savings_plan_rate(catalog: Catalog, site: CloudSite, instance: str, term: str) -> float | None:
    """USD per node-hour a Savings Plan of `term` bills for usage it covers at `site`, or None where
    the site does not opt in, or the instance has no on-demand rate there to discount."""
    if term not in site.pricing:
        return None
    od = cloud_price(catalog, site, instance, "on_demand")
    share = savings_plan_share(catalog, site.provider, term)
    return None if od is None or share is None else od * share


def savings_plan_months_charged(term: str, start: int, horizon_months: int, rule: str) -> int:
    """Months of a Savings Plan starting in `start` its commitment variable pays for: the whole term
    under `full`; its months inside the horizon under `prorated` and `continues` (`continues`
    charges the rest where the last month's usage leaves the commitment unused)."""
    months = SAVINGS_PLAN_MONTHS[term]
    return months if rule == "full" else min(months, horizon_months - start)


CAPACITY_BLOCK = "capacity_block"   # the site pricing option (docs/capacity-blocks.md)
# A block's rules (capacity_blocks.yaml): `capacity_block_days.<provider>.daily_up_to` and the like
# where a provider states its own; the names without a provider are AWS's (its Capacity Blocks for
# ML), and apply to AWS alone. A rule a provider states none of is no limit.
BLOCK_RULES = ("capacity_block_days.daily_up_to", "capacity_block_days.weekly_up_to",
               "capacity_block_instances.per_block", "capacity_block_instances.per_account")
ULTRASERVER = "capacity_block_ultraserver."   # .<provider>.<instance>.<ultraserver type>: instances in one


def capacity_block_rule(catalog: Catalog, rule: str, provider: str) -> float | None:
    """One of BLOCK_RULES for a provider: its own figure, else AWS's where the provider is AWS."""
    group, leaf = rule.split(".", 1)
    f = catalog.factors.get(f"{group}.{provider}.{leaf}")
    if f is None and provider == "aws":
        f = catalog.factors.get(rule)
    return None if f is None else float(f.value)


def capacity_block_ultraserver(catalog: Catalog, provider: str, instance: str) -> tuple[str, int] | None:
    """(UltraServer type, its instances) where the provider sells `instance`'s blocks only as whole
    UltraServers (AWS's P6e-GB200: u-p6e-gb200x72, 18 instances), else None."""
    prefix = f"{ULTRASERVER}{provider}.{instance}."
    for name, f in sorted(catalog.factors.items()):
        if name.startswith(prefix) and "." not in name[len(prefix):]:
            return name[len(prefix):], int(f.value)
    return None


def capacity_block_rate(catalog: Catalog, site: CloudSite, instance: str) -> float | None:
    """USD per instance-hour of a Capacity Block (AWS) or calendar-mode reservation (GCP) of
    `instance` in the site's region, or None where the site does not opt in or the catalog sells
    no block there."""
    if CAPACITY_BLOCK not in site.pricing:
        return None
    f = catalog.factors.get(f"capacity_block_usd_per_hour.{site.provider}.{site.region}.{instance}")
    return None if f is None else float(f.value)


def capacity_block_days(catalog: Catalog, hours: float, provider: str = "aws") -> int | None:
    """The shortest block that covers a run of `hours`: whole days up to the provider's daily
    limit, whole weeks beyond it up to its longest; None where the run is longer than any block."""
    daily = int(capacity_block_rule(catalog, "capacity_block_days.daily_up_to", provider) or 0)
    longest = int(capacity_block_rule(catalog, "capacity_block_days.weekly_up_to", provider) or daily)
    days = max(1, math.ceil(hours / 24.0 - 1e-9))
    if days > daily:
        days = 7 * math.ceil(days / 7)
    return days if days <= longest else None


def capacity_block_billed(catalog: Catalog, provider: str, instance: str, nodes: int) -> int:
    """Instances a job of `nodes` pays blocks for: its nodes, or whole UltraServers of them."""
    unit = capacity_block_ultraserver(catalog, provider, instance)
    return nodes if unit is None else unit[1] * math.ceil(nodes / unit[1])


def capacity_block_count(catalog: Catalog, nodes: int, provider: str = "aws", instance: str = "") -> int | None:
    """Blocks that hold `nodes` instances (each at most the provider's per-block size, or one
    UltraServer each), or None where the provider's limit across an account's blocks is passed."""
    billed = capacity_block_billed(catalog, provider, instance, nodes)
    account = capacity_block_rule(catalog, "capacity_block_instances.per_account", provider)
    if account is not None and billed > account:
        return None
    unit = capacity_block_ultraserver(catalog, provider, instance)
    if unit is not None:
        return billed // unit[1]
    per_block = capacity_block_rule(catalog, "capacity_block_instances.per_block", provider)
    return 1 if per_block is None else math.ceil(nodes / per_block)


def capacity_block_usd(catalog: Catalog, site: CloudSite, instance: str, nodes: int, hours: float,
                       runs: int = 1) -> tuple[int, float] | None:
    """(days, USD) of the blocks a job of `nodes` instances running `hours` a run needs, `runs`
    runs: the rate x the instances billed (its nodes, or whole UltraServers) x 24 x days, each
    run's block paid in full; None where none is sold."""
    rate = capacity_block_rate(catalog, site, instance)
    if rate is None or capacity_block_count(catalog, nodes, site.provider, instance) is None:
        return None
    days = capacity_block_days(catalog, hours, site.provider)
    billed = capacity_block_billed(catalog, site.provider, instance, nodes)
    return None if days is None else (days, rate * billed * 24.0 * days * runs)


def life_months(node: OnPremNode) -> int:
    """A node model's useful life in whole months."""
    return round(node.useful_life_years * 12)


def life_left(node: OnPremNode, bought: str, start: str) -> int:
    """Months of useful life left at `start` to nodes bought in `bought` (both YYYY-MM); 0 or
    less: their life ended before it."""
    return month_number(bought) + life_months(node) - month_number(start)


def capex_in_horizon(node: OnPremNode, horizon_months: int) -> float:
    """The part of a node's purchase price its months inside the horizon use up (straight line
    over its useful life, bought in month 0)."""
    life_months = node.useful_life_years * 12.0
    return node.capex_usd * min(1.0, horizon_months / life_months)


def capex_after_horizon(node: OnPremNode, horizon_months: int) -> float:
    """The part of a node's purchase price its life after the horizon uses up."""
    return node.capex_usd - capex_in_horizon(node, horizon_months)


def capex_charged(node: OnPremNode, horizon_months: int, rule: str) -> float:
    """What a bought node's purchase costs the plan before any idle-tail charge: all of it under
    `full`; otherwise its months inside the horizon (`continues` charges the rest per idle node)."""
    return node.capex_usd if rule == "full" else capex_in_horizon(node, horizon_months)


def term_months_after(term: str, start: int, horizon_months: int) -> int:
    """Months of a reserved term starting in `start` that fall after the horizon."""
    return max(0, start + TERM_MONTHS[term] - horizon_months)


def term_months_charged(term: str, start: int, horizon_months: int, rule: str) -> int:
    """Months of a reserved term its own variable pays for: the whole term under `full`; under
    `prorated` and `continues` its months inside the horizon (`continues` charges the rest per
    idle node)."""
    months = TERM_MONTHS[term]
    return months if rule == "full" else months - term_months_after(term, start, horizon_months)


def support_cost(node: OnPremNode, horizon_months: int) -> float:
    return node.support_usd_per_year * horizon_months / 12.0


def power_usd_per_node_hour(node: OnPremNode, site: OnPremSite) -> float:
    return node.power_kw * site.pue * site.electricity_usd_per_kwh


def fabric_switches_per_node(fabric: Fabric) -> float:
    return 3.0 * fabric.ports_per_node / fabric.switch_radix


def fabric_cost_per_node(fabric: Fabric) -> float:
    return (fabric.ports_per_node * fabric.cost_per_port_usd
            + fabric_switches_per_node(fabric) * fabric.switch_cost_usd)


def bought_node_cost(node: OnPremNode, fabric: Fabric | None, horizon_months: int, rule: str = "prorated",
                     busy_at_end: bool = False) -> float:
    """Capex + support + fabric share for one bought node over the horizon; under `continues`
    its life after the horizon is paid unless the node is busy in the horizon's last month."""
    tail = capex_after_horizon(node, horizon_months) if rule == "continues" and not busy_at_end else 0.0
    return (capex_charged(node, horizon_months, rule) + tail + support_cost(node, horizon_months)
            + (fabric_cost_per_node(fabric) if fabric else 0.0))


def storage_tiers(catalog: Catalog, site) -> tuple[StorageTier, ...]:
    names = CLOUD_TIER_BY_PROVIDER.get(provider_of(site), ())
    return tuple(catalog.storage[n] for n in names if n in catalog.storage)


def storage_month_cost(tier: StorageTier) -> float:
    """USD per TB per month provisioned (capex handled separately, per TB of peak)."""
    return tier.usd_per_tb_month


def egress_usd_per_tb(catalog: Catalog, home_site) -> float:
    eg = catalog.egress.get(provider_of(home_site))
    return 0.0 if eg is None else eg.usd_per_gb * 1000.0
