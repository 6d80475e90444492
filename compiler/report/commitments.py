"""The report's "Commitments after the horizon": every reserved term and bought node that outlives
the horizon, what its months after it cost, and what the plan's total pays for them under the
spec's policy.after_horizon (docs/optimizer.md, "Commitments that outlive the horizon")."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import Plan

RULES = {
    "prorated": ("policy.after_horizon is `prorated` (the default): the total pays each commitment's "
                 "months inside the horizon only; the months after it are committed all the same, "
                 "and set `full` to count them."),
    "full": ("policy.after_horizon is `full`: every commitment is paid in full, so the total "
             "includes each term's months after the horizon and each bought node's whole price."),
    "continues": ("policy.after_horizon is `continues`: the months after the horizon are valued as if "
                  "the last month's load went on; the total pays them only for the nodes that load "
                  "would leave idle."),
}
PRICING = {"reserved_1y": "1-year term", "reserved_3y": "3-year term", "purchase": "bought (useful life)"}


@dataclass(frozen=True)
class CommitmentRow:
    site: str
    instance: str
    pricing: str                  # in words
    nodes: int
    node_months: float
    committed_usd: float
    charged_usd: float


@dataclass(frozen=True)
class CommitmentsView:
    rule: str                     # one sentence: the rule and what it does to the total
    committed_usd: float
    charged_usd: float
    rows: tuple[CommitmentRow, ...]


def build(plan: Plan) -> CommitmentsView:
    ah = plan.after_horizon
    rows = tuple(CommitmentRow(c.site, c.instance, PRICING.get(c.pricing, c.pricing), c.nodes, c.node_months,
                               c.committed_usd, c.charged_usd)
                 for c in sorted(ah.commitments, key=lambda c: (c.site, c.instance, c.pricing)))
    return CommitmentsView(RULES.get(ah.rule, ah.rule), ah.committed_usd, ah.charged_usd, rows)
