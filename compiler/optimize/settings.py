"""Every tuned number of the solver, in one frozen object, each with one line of why.

The strategy (strategy.py) chooses its path from these; the steps read their budgets from them;
tests and benchmarks pass a Settings of their own (`dataclasses.replace(DEFAULT, ...)`, through
SolveOptions.settings) instead of patching module globals. Budgets are counts (nodes, integers,
passes), never seconds: a count stops at the same plan on every machine, a clock does not.
docs/optimizer.md ("Strategy and settings") explains the paths these numbers choose between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:
    from compiler.optimize.moves import Kept


@dataclass(frozen=True)
class Settings:
    # --- choosing the path (the problem's integer count; strategy.py) ---
    # below it the greedy start goes straight to branch-and-bound: such problems prove their
    # optimum in seconds, and a round's root would only repeat the search's first work
    min_integers: int = 2000
    # from it the rounds' plan is the answer with no branch-and-bound after it: a search's root
    # alone costs minutes there and ends above the rounds' plan
    search_max: int = 20000

    # --- branch-and-bound ---
    # a CBC search's default node budget: the shipped examples need tens of nodes
    max_nodes: int = 1000
    # a HiGHS search's default budget after the rounds: a HiGHS node costs several of CBC's and
    # its root closes more of the gap
    highs_nodes: int = 100
    # a small default HiGHS search seeks the optimum's proof for this many nodes before it
    # settles for a proven `settle_gap`
    settle_after: int = 25
    # the settled search's node budget: nodes whose bound is within the gap are pruned, so 1%
    # is proven in far fewer nodes than the optimum
    settle_nodes: int = 5000
    # the settled search stops when neither its plan nor its bound has moved in this many nodes:
    # where the bound has stopped rising, more nodes rarely prove the gap
    settle_stall: int = 200
    # the gap the settled search proves: the realistic specs' target
    settle_gap: float = 0.01
    # a default search that seeks the optimum's proof goes on for at most this many of HiGHS's
    # interrupt points (its cut rounds and nodes) once its plan is proven within settle_gap: a
    # proof the root is about to finish is kept, a root that creeps toward it for a minute is not
    proof_points: int = 100
    # problems from this many integers are not settled: their nodes cost too much for it
    settle_max_integers: int = 10000
    # the settled search's pool of cuts: with nodes pruned at 1% it needs many cheap nodes, not
    # a few strong ones, so its LPs stay small
    settle_cut_pool: int = 100
    # HiGHS's own default soft limit on its pool of cuts, for every other solve
    cut_pool: int = 10000
    # the relative gap at which a plan counts as proven optimal (HiGHS's mip_rel_gap)
    proven_gap: float = 1e-4
    # the solvers' random seed: fixed, so a compile is the same on every run
    seed: int = 20240601

    # --- month floors and month windows (small platforms whose replicas span months) ---
    # months per block of the month floors: three keep a block's sub-problem small and its
    # floor above the LP's
    block_months: int = 3
    # a block's node budget: its sub-problem is solved to its end within it
    block_nodes: int = 20000
    # a block is solved to its optimum (its floor is its bound, which a gap would lower)
    block_gap: float = 0.0
    # a floor is lowered by this share against the solver's rounding, so it never cuts off a plan
    floor_tolerance: float = 1e-7
    # months a month window frees: two let a term's start move by one month
    window_months: int = 2
    # months between the starts of two windows: every pair of neighbouring months is searched
    window_step: int = 1
    # a month window's node budget: its sub-problem is small enough to search, not only its root
    window_nodes: int = 200
    # passes over the month windows at most: the plan stops moving within a few
    window_cycles: int = 4
    # cheaper plans the fewer-nodes rounds may find among the month windows, each followed by
    # the windows again
    fewer_passes: int = 4
    # the month windows' plan is the answer, with no search after it, where it is proven within
    # this of the bound (a user's --gap, --max-nodes or --time-limit always runs the search)
    months_gap: float = 0.01
    # passes of the floors' weights re-split (floor_weights.py) where the plan ends above
    # months_gap: a seeded small spec bounded at 1.14% reaches 1% in 4, and each pass is about
    # the floors' own time
    reweigh_passes: int = 8
    # a block's node budget in those passes, and the most a block of the floors may have taken for
    # them to run at all: the floors of small platforms close in hundreds of nodes a block, the
    # multi-region example's last block in thousands, where eight passes would cost minutes
    reweigh_nodes: int = 2000
    # the first pass's Polyak step factor, and its shrink a pass: a full step toward the plan's
    # cost, then shorter, since the dual function's steps oscillate once near its top
    reweigh_step: float = 1.0
    reweigh_shrink: float = 0.8
    # months per block of the coarse floors, a second partition solved beside the floors and the
    # month windows on the core they leave idle: a block a month longer makes each reserved term's
    # choice agree over more months, where the floors' split lets each quarter buy its own
    # (month_floors.py)
    coarse_block_months: int = 4
    # the coarse floors run only where a block of the month floors took more than this: where
    # every block closes at its root, the blocks' LPs already hold their integer plans, and the
    # longer blocks find little and cost most (a long training window's blocks: benchmarks/LOG.md).
    # They start as soon as one block has, on the core the floors' last block leaves idle
    coarse_after_nodes: int = 1

    # --- neighbourhood rounds (larger platforms; schedules.rounds on engine.py) ---
    # each round stops after this many nodes: its root; where the rounds end is then the same on
    # every machine
    round_nodes: int = 1
    # cycles of rounds where a search follows them: the second finds what the first's changes opened
    cycles: int = 2
    # cycles where the rounds' plan is the answer (from search_max integers): a second costs
    # more than it finds there, and the tail's rounds follow
    large_cycles: int = 1
    # rounds solved at once, on threads: a constant, not the machine's cores, since which
    # rounds run together decides the plan
    workers: int = 2
    # serving windows run `workers` at a time only where there are this many: a paired window
    # plans from a plan before its neighbour's changes, which costs little only among many
    paired_windows: int = 8
    # integers one serving window frees at most (a month over it is a window alone): keeps a
    # window's root to seconds
    window_integers: int = 6000
    # integers a fewer-nodes round frees at most: larger rounds' roots cost more than they find
    fewer_nodes_integers: int = 8000
    # integers a narrowed fewer-nodes round (the large platforms' tail) frees at most
    narrowed_integers: int = 9000
    # lp-guided (RINS) holds an integer where its LP value equals the incumbent's
    lp_guided_within: float = 1e-6
    # lp-rounded holds it also where the LP value rounds to the incumbent's, so only where the
    # LP points away from the plan is free
    lp_rounded_within: float = 0.5
    # training jobs with this many candidates each (on average) make the large platforms'
    # training round stop at its first cheaper plan: the rest of a long root seldom finds more
    first_plan_candidates: int = 150
    # pools of this many nodes also get a round two nodes fewer: one node of many moves the plan
    # too little for a root to find the repacking
    two_fewer_nodes: int = 20
    # the pools' re-plan after two rounds' plans are merged: a small MIP
    merge_nodes: int = 500

    # --- operability limits (narrow.py) ---
    # the share of a service's indicator sum its K highest must carry for the LP dive to fix the
    # service: an LP that has put nearly all its weight on K keys has chosen them
    decided: float = 0.99

    # --- the estimate's count scan (pipeline.estimate_candidates) ---
    # from this many node counts of one training workload, a compile first makes a plan on a
    # sample of them and leaves out the counts no plan that cheap can use: the generated
    # platforms scan a few thousand a workload and are left as they are, long windows scan tens
    # of thousands
    sample_from: int = 8000

    # --- building the model: enumeration budgets (mixes.py, cuts.py, reductions.py) ---
    # more minimal replica mixes than this for one service-month: row cuts instead
    max_mixes: int = 300
    # partial replica vectors visited at most while enumerating one service-month's mixes
    max_mix_visits: int = 10_000
    # points enumerated at most to lift one facet over a row's other candidates
    max_lift_points: int = 20_000
    # rows where a candidate may need more replicas than this get no cuts: rounding to whole
    # replicas matters little there, and lifting grows with the counts
    max_cut_replicas: int = 16
    # replicas of one candidate tried against a bundle of another (replica caps)
    max_bundle: int = 16

    # --- canonical plans (canonical.py) ---
    # a node budget for each of a month group's levels: a group is a month's services on the
    # pools they share, with everything else held, and ends within tens of nodes
    canonical_nodes: int = 5000
    # plans within this share of a group's cheapest cost cost the same (the solvers' rounding):
    # two plans that differ by a replica or a node-hour differ by cents at least, far above it
    canonical_tolerance: float = 1e-9

    # --- polish and explanations ---
    # the node budget of the shared integers' re-plan with the plan's choices held (steps.shared):
    # with the choices held the rest closes at its root on every platform measured
    shared_nodes: int = 100
    # passes of lowering integers (descend.py) before the plan is priced: each pass lets go of
    # nodes the last one's changes left unused; three reach the fixed point on every spec tested
    descend_passes: int = 3
    # infeasible constraints named at most in one explanation
    max_reported: int = 8
    # the explanation's USD per unit of violation, by constraint group: it gives up a kW or a GPU
    # of quota long before a workload, so the rows it names are the ones a person would relax
    penalties: Mapping[str, float] = field(hash=False, default_factory=lambda: MappingProxyType({
        "power": 1e5, "racks": 1e6, "max_gpus": 1e5, "quota": 1e5, "cloud_share": 1.0, "availability": 1e4,
        "demand": 1e5, "placement": 1e10, "capacity": 1e7, "operability": 1e3}))

    # --- tolerances (not tuned: the solvers' own accuracy) ---
    # a row's slack tolerance in descend: the solvers' feasibility tolerance
    slack_tolerance: float = 1e-6
    # equality of two replica or node counts computed in floating point
    count_tolerance: float = 1e-9
    # a cheaper plan is one cheaper by this share of its cost at least (the solvers' rounding)
    improvement: float = 1e-6

    def margin(self, reference: float) -> float:
        """What the solvers' rounding may move a cost of `reference` by: `improvement` of it, or of 1."""
        return self.improvement * max(1.0, abs(reference))

    def cheaper(self, objective: float, best: float) -> bool:
        """Whether a plan costing `objective` is cheaper than one costing `best`, beyond rounding."""
        return objective < best - self.margin(best)

    def above(self, value: float, reference: float) -> bool:
        """Whether `value` is above `reference` beyond rounding (a bound lifted, a plan dearer)."""
        return value > reference + self.margin(reference)


DEFAULT = Settings()


@dataclass(frozen=True)
class SolveOptions:
    """What the user asked of one solve (the CLI's options), and the settings it runs under."""
    solver: str = "auto"                # auto | cbc | highs (auto: strategy.choose picks)
    time_limit: float | None = None     # seconds
    gap: float | None = None            # relative MIP gap to stop at
    progress: Callable[[str], None] | None = None
    max_nodes: int | None = DEFAULT.max_nodes   # branch-and-bound nodes; 0 or None: no limit
    nodes_given: bool = False           # the user set max_nodes (--max-nodes), even to the default
    settings: Settings = DEFAULT
    # A plan given from outside, its integers by variable name (a deployed plan to re-plan from):
    # every path starts from it where it is a plan of this problem no dearer than the greedy start.
    start: Mapping[str, float] | None = field(default=None, hash=False)
    # Where a re-plan's baseline ran each workload (moves.Kept): a move is priced, and the plan
    # that keeps them is a start.
    kept: "Kept | None" = field(default=None, hash=False)
    # The candidates are cut to a few sites and types a service (operability.limited): the plan
    # states the bound proved without the limits, so this search's own bound is dropped.
    narrowed: bool = False
    # A search over narrowed candidates: the path the solve without the limits took. Where that was
    # rounds-only (a platform too large to search), this one is too, whatever its own size: its
    # bound is dropped, so a root of minutes would buy plans only, and the path stays the platform's
    # whether the limits narrow it or a re-plan keeps services where they ran.
    free_path: str | None = None

    @property
    def nodes_asked(self) -> bool:
        """Whether the user asked for a node budget (--max-nodes, or a budget other than the default)."""
        return self.nodes_given or self.max_nodes != self.settings.max_nodes

    @property
    def search_asked(self) -> bool:
        """Whether the user asked for a search of their own: a node budget, a time limit or a gap."""
        return self.nodes_asked or self.time_limit is not None or self.gap is not None
