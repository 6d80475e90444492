"""SOLVE: Problem -> Solution with pulp (the only module that imports pulp).

CBC (bundled with pulp) by default, HiGHS (highspy) with solver="highs". Deterministic:
variables and constraints enter the solver in the Problem's sorted order under index-based
names (v0000042), CBC runs on one thread with fixed seeds, HiGHS on one thread with a fixed
random seed. `elastic` adds a penalized slack to every constraint of the named groups; the
infeasibility explainer uses it. A limit (nodes, time) ends in a plan ("feasible") or in
"no_solution" (exit 5), never in an exception, whatever pulp or the solver does at that moment:
_run_cbc and _run_highs say what each of them does wrong and how it is worked around.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import threading
import time
from typing import Callable, Mapping

import pulp

from compiler.problem import Problem, Solution  # noqa: F401 - Solution re-exported
from compiler.optimize.settings import DEFAULT


def relative_gap(objective: float, bound: float) -> float:
    """The plan's distance above the best bound, as a share of the plan: what `gap` reports."""
    return 0.0 if abs(objective) < 1e-9 else max(0.0, (objective - bound) / abs(objective))


def solve(problem: Problem, solver: str = "cbc", time_limit: float | None = None,
          gap: float | None = None, elastic: Mapping[str, float] | None = None,
          start: Mapping[str, float] | None = None, max_nodes: int | None = None,
          fixed: Mapping[str, float] | None = None, seed: int = DEFAULT.seed) -> Solution:
    """`start`: values of integer variables for a MIP start (start.py): CBC's -mips, HiGHS's
    setSolution. `max_nodes` stops the branch-and-bound search after that many nodes: unlike a
    time limit, where it stops is the same on every machine, so the plan is too. `fixed` holds
    variables at the given values (improve.py); `seed`: the solvers' random seed (Settings.seed)."""
    # HiGHS sees value / Variable.scale (its reduced-cost fixing is what the scale is for); CBC
    # the values themselves: its solution file has too few digits to scale back to 1e-6 exactly.
    scale = {v.name: v.scale for v in problem.variables if v.scale != 1.0} if solver == "highs" else {}
    lp, pv, slacks = _pulp_model(problem, scale, elastic, fixed)
    t0 = time.perf_counter()
    status, bound, mip_gap = _run(lp, pv, scale, solver, time_limit, gap, max_nodes, start, elastic, seed)
    seconds = time.perf_counter() - t0
    if status not in ("optimal", "feasible"):
        return Solution(solver, status, float("nan"), float("nan"), float("nan"), seconds)
    values = {name: float(var.varValue or 0.0) * scale.get(name, 1.0) for name, var in pv.items()}
    obj = _objective(problem, values, elastic, slacks)
    bound = _bound(status, obj, bound, mip_gap)
    return Solution(solver, status, obj, bound, relative_gap(obj, bound), seconds, values, _slack(slacks))


def _pulp_model(problem: Problem, scale: Mapping[str, float], elastic: Mapping[str, float] | None,
                fixed: Mapping[str, float] | None) -> tuple[pulp.LpProblem, dict[str, pulp.LpVariable], dict]:
    """The Problem as a pulp model: its variables, then its rows, in the Problem's order under
    index-based names, and the objective; with the elastic rows' slacks, (row, +1 over / -1
    under) -> slack."""
    lp = pulp.LpProblem("plan", pulp.LpMinimize)
    cat = {"binary": pulp.LpBinary, "integer": pulp.LpInteger, "continuous": pulp.LpContinuous}
    pv: dict[str, pulp.LpVariable] = {}
    for k, v in enumerate(problem.variables):
        f = scale.get(v.name, 1.0)
        ub = 1 if v.kind == "binary" else (None if v.ub is None else v.ub / f)
        pv[v.name] = lp.add_variable(f"v{k:07d}", lowBound=0, upBound=ub, cat=cat[v.kind])
        if fixed and v.name in fixed:
            # after creation: pulp resets a binary's bounds to 0..1 when it is made
            pv[v.name].lowBound = pv[v.name].upBound = fixed[v.name] / f
    objective = pulp.LpAffineExpression([(pv[v.name], v.cost * scale.get(v.name, 1.0))
                                         for v in problem.variables if v.cost])
    slacks: dict[tuple[str, int], pulp.LpVariable] = {}   # (row, +1 over / -1 under) -> its slack
    for k, c in enumerate(problem.constraints):
        if elastic and c.group == "cut":
            continue    # valid inequalities of rows that may now bend; the model means the same
        expr = pulp.LpAffineExpression([(pv[n], a * scale.get(n, 1.0)) for n, a in c.terms])
        penalty = (elastic or {}).get(c.group)
        if penalty is not None:
            expr = _bend(lp, k, c.name, c.sense, expr, penalty, objective, slacks)
        if c.sense == "<=":
            lp += (expr <= c.rhs, f"c{k:07d}")
        elif c.sense == ">=":
            lp += (expr >= c.rhs, f"c{k:07d}")
        else:
            lp += (expr == c.rhs, f"c{k:07d}")
    lp += objective
    return lp, pv, slacks


def _bend(lp: pulp.LpProblem, k: int, row: str, sense: str, expr: pulp.LpAffineExpression, penalty: float,
          objective: pulp.LpAffineExpression, slacks: dict) -> pulp.LpAffineExpression:
    """An elastic row: a penalized slack that lets it bend its way (both ways for an equality),
    recorded in `slacks` and charged in `objective`; returns the row's bent expression."""
    up = lp.add_variable(f"s{k:07d}", lowBound=0)
    slacks[(row, 1)] = up
    objective.addInPlace(penalty * up)
    if sense == "<=":
        return expr - up
    if sense == ">=":
        return expr + up
    down = lp.add_variable(f"t{k:07d}", lowBound=0)
    objective.addInPlace(penalty * down)
    slacks[(row, -1)] = down
    return expr + up - down


def _run(lp: pulp.LpProblem, pv: Mapping[str, pulp.LpVariable], scale: Mapping[str, float], solver: str,
         time_limit, gap, max_nodes: int | None, start: Mapping[str, float] | None,
         elastic: Mapping[str, float] | None, seed: int) -> tuple[str, float | None, float | None]:
    """The chosen solver's status, bound and gap, given the MIP start (none for an elastic model)."""
    if solver == "highs":
        begin = {pv[n]: v / scale.get(n, 1.0) for n, v in (start or {}).items() if n in pv} if not elastic else {}
        return _run_highs(lp, time_limit, gap, max_nodes, begin, seed)
    if solver == "cbc":
        warm = False
        if start and not elastic:
            for name, value in start.items():
                if name in pv:
                    pv[name].setInitialValue(value / scale.get(name, 1.0))
            warm = True
        return _run_cbc(lp, time_limit, gap, warm, max_nodes, seed)
    raise ValueError(f"unknown solver {solver!r}: use cbc or highs")


def _objective(problem: Problem, values: Mapping[str, float], elastic: Mapping[str, float] | None,
               slacks: Mapping[tuple[str, int], pulp.LpVariable]) -> float:
    """The plan's cost from its values (not the solver's objective), with the elastic slacks'
    penalties."""
    obj = sum(v.cost * values[v.name] for v in problem.variables)
    if elastic:
        group = {c.name: c.group for c in problem.constraints}
        obj += sum((elastic.get(group[row]) or 0.0) * float(s.varValue or 0.0)
                   for (row, _sign), s in slacks.items())
    return obj


def _bound(status: str, obj: float, bound: float | None, mip_gap: float | None) -> float:
    """The plan's lower bound, never above the plan. No bound read back: a proven optimum is its
    own bound; otherwise fall back on the gap the solver reported, and failing that on 0 (every
    cost is >= 0), never on the plan itself."""
    if bound is None or bound != bound:
        if status == "optimal":
            bound = obj
        elif mip_gap is not None and mip_gap == mip_gap:
            bound = obj * (1 - mip_gap)
        else:
            bound = 0.0
    return min(bound, obj)


def _slack(slacks: Mapping[tuple[str, int], pulp.LpVariable]) -> dict[str, float]:
    """Each bent row's net violation (over minus under), where it bends at all."""
    slack = {}
    for (row, sign), s in slacks.items():
        val = float(s.varValue or 0.0)
        if val > 1e-6:
            slack[row] = slack.get(row, 0.0) + sign * val
    return slack


# Neighbourhood searches around the incumbent (DINS, RINS, RENS, VND). By default CBC stops
# looking for better plans once it has the greedy start; with these on, a large platform's
# search moves well below the start instead of staying on it (benchmarks/LOG.md).
CBC_HEURISTICS = ("rins on", "dins on", "rens on", "vnd on")


def _cbc(log: str, tmp: str, seed: int, options: tuple[str, ...] = (), **kwargs) -> pulp.COIN_CMD:
    """COIN_CMD on the CBC binary bundled with pulp (PULP_CBC_CMD is deprecated in pulp 3.3), on
    one thread with fixed seeds, its files in `tmp` (pulp leaves its .mps/.mst behind when CBC
    fails); `options` come after the seeds."""
    cmd = pulp.COIN_CMD(path=pulp.PULP_CBC_CMD.pulp_cbc_path, msg=False, threads=1, logPath=log,
                        options=[f"randomSeed {seed}", f"randomCbcSeed {seed}", *options], **kwargs)
    cmd.tmpDir = tmp
    if not cmd.available():
        raise pulp.PulpSolverError(f"cannot execute the CBC binary {cmd.path}")
    return cmd


def _run_cbc(lp: pulp.LpProblem, time_limit, gap, warm: bool = False,
             max_nodes: int | None = None, seed: int = DEFAULT.seed) -> tuple[str, float | None, float | None]:
    """CBC's status, bound and gap; with `warm`, the variables' initial values are its MIP start.

    With a MIP start, a run ends in the start or a cheaper plan, or in "no_solution" (exit 5) if
    the start is no plan; without one, in CBC's plan or "no_solution"; never in an exception.
    CBC 2.10.3 (the binary bundled with pulp 3.3) does not keep that promise by itself:

    - A time limit that runs out while CBC is still preprocessing (CglPreProcess watches the
      clock too) makes it fail in one of two ways, found on the 100-workload benchmark with the
      greedy start by sweeping -sec. With a MIP start it accepts the start, leaves the search at
      once ("Exiting on maximum time ... 0 nodes") and then dies of a segmentation fault while it
      writes out the result (exit 139, no solution file), and pulp raises PulpSolverError "Error
      while trying to execute": -sec 0.3 to 1.9 crashed, 0.2 and 2.0 did not; with -preprocess
      off, or without -mips, none did. Or it says "Pre-processing says infeasible or unbounded",
      a false verdict ("Integer infeasible" in the solution file, with a start that is a plan).
      The fix-and-optimize rounds and the main solve take what is left of --time-limit, so where
      the limit lands depends on the machine's load: both came and went with it (a start test
      on 100 workloads failed one run in four).
    - Its preprocessing can make it reject a start that is a plan ("Warning: mipstart values
      could not be used to build a solution"; coin-or/Cbc#282): on a 40-workload platform it
      then ended a 1-node search with no plan at all.

    So whenever CBC did not take the start ("MIPStart provided solution" not in its log) or
    ended without a plan, failed or said "infeasible", the start is completed here: CBC solves
    the problem with the start's integers held (an LP; no -mips, no time limit, neither
    ingredient of the failures), and the cheaper of that and CBC's own plan is returned, with
    the last lower bound CBC logged. Plans CBC found after the start are lost when it crashes.
    An "infeasible" verdict that no start disproves is not trusted from a run that reached its
    time limit: "no_solution" then.
    """
    start = {v: v.varValue for v in lp.variables() if v.cat == pulp.LpInteger} if warm else {}
    with tempfile.TemporaryDirectory(prefix="cbc-") as tmp:
        log = os.path.join(tmp, "cbc.log")
        cmd = _cbc(log, tmp, seed, timeLimit=time_limit, gapRel=gap, warmStart=warm,
                   options=(*CBC_HEURISTICS, *([f"maxNodes {max_nodes}"] if max_nodes else [])))
        t0 = time.perf_counter()
        try:
            lp.solve(cmd)
            failed = False
        except pulp.PulpSolverError:
            failed = True         # a non-zero exit (the crash above) or no solution file
        clock_ran_out = time_limit is not None and time.perf_counter() - t0 >= time_limit
        text = _read(log)
        status = "failed" if failed else _cbc_status(lp, text)
        bound = _last_float(r"Lower bound:\s*(-?[\d.eE+-]+)", text)
        mip_gap = _last_float(r"Gap:\s*(-?[\d.eE+-]+)", text)
        if start and status != "optimal" and (status != "feasible" or "MIPStart provided solution" not in text):
            # CBC's own plan, if it has one, and what it costs
            ours = {v: v.varValue for v in lp.variables()} if status == "feasible" else {}
            cost = _cost(lp) if ours else None
            if _complete(lp, start, tmp, seed) and (cost is None or _cost(lp) < cost - 1e-9 * abs(cost)):
                # the last bound CBC logged (a crashed run logs no result: its last progress line)
                if status == "infeasible":
                    bound = None
                elif bound is None:
                    bound = _last_float(r"best possible\s*(-?[\d.eE+-]+)", text)
                if bound is not None and not abs(bound) < 1e40:
                    bound = None      # CBC's "infinity" (1e+50, DBL_MAX): none yet
                return "feasible", bound, None
            for v, value in ours.items():
                v.varValue = value
    if status == "failed" or (status == "infeasible" and clock_ran_out):
        return "no_solution", None, None
    if status in ("optimal", "feasible"):
        return status, bound, mip_gap
    return status, None, None


def _cbc_status(lp: pulp.LpProblem, text: str) -> str:
    """optimal | feasible | infeasible | unbounded | no_solution, from what pulp read and CBC's log."""
    sol = lp.sol_status
    if lp.status == pulp.LpStatusInfeasible or sol == pulp.LpSolutionInfeasible:
        return "infeasible"
    if lp.status == pulp.LpStatusUnbounded:
        return "unbounded"
    if sol == pulp.LpSolutionOptimal and "Stopped on" not in text:
        return "optimal"
    if sol in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal):
        return "feasible"
    if "infeasible" in text.lower() and "Stopped on" not in text:
        return "infeasible"
    return "no_solution"


def _complete(lp: pulp.LpProblem, start: Mapping[pulp.LpVariable, float | None], tmp: str, seed: int) -> bool:
    """Solve `lp` with every integer variable held at its MIP start value (as CBC's MIP start
    does: a value not given is 0); True if that is a plan, its values then in the variables."""
    saved = {v: (v.lowBound, v.upBound) for v in start}
    try:
        for v, value in start.items():
            v.lowBound = v.upBound = float(round(value or 0.0))
        lp.solve(_cbc(os.path.join(tmp, "start.log"), tmp, seed))
    except pulp.PulpSolverError:
        return False
    finally:
        for v, (lo, up) in saved.items():
            v.lowBound, v.upBound = lo, up
    return lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)


def _cost(lp: pulp.LpProblem) -> float:
    value = lp.objective.value()
    return math.inf if value is None else float(value)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _last_float(pattern: str, text: str) -> float | None:
    found = re.findall(pattern, text)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


class _HiGHSFrom(pulp.HiGHS):
    """pulp's HiGHS with a MIP start: values for some variables, set after the model is built."""

    def __init__(self, start: Mapping[pulp.LpVariable, float], **kwargs) -> None:
        super().__init__(**kwargs)
        self.start = start

    def callSolver(self, lp):
        if self.start:
            _set_start(lp.solverModel, sorted((v.index, float(x)) for v, x in self.start.items()))
        lp.solverModel.run()


def _set_start(highs, pairs: list[tuple[int, float]]) -> None:
    """Hand HiGHS a (partial) MIP start: (column index, value) pairs, in column order."""
    import numpy as np

    highs.setSolution(len(pairs), np.array([k for k, _ in pairs], dtype=np.int32),
                      np.array([x for _, x in pairs], dtype=np.float64))


def _run_highs(lp: pulp.LpProblem, time_limit, gap, max_nodes: int | None = None,
               start: Mapping[pulp.LpVariable, float] | None = None,
               seed: int = DEFAULT.seed) -> tuple[str, float | None, float | None]:
    """HiGHS's status, bound and gap, read from highspy itself, not from pulp.

    pulp 3.3's HiGHS.findSolutionValues maps HiGHS's model status through a table that lacks
    kSolutionLimit (what HiGHS reports when mip_max_nodes, mip_max_leaves or
    mip_max_improving_sols stops it), kMemoryLimit and kHighsInterrupt: after HiGHS has finished,
    pulp raises KeyError(<HighsModelStatus.kSolutionLimit: 16>), so `--max-nodes` with `--solver
    highs` on a model that needs more nodes was a traceback. That KeyError, and only that one, is
    caught here; status, incumbent, bound and gap are then read from `lp.solverModel` (the
    highspy.Highs pulp ran) for every outcome, and the incumbent's values set on the variables.
    Nothing of pulp is patched. `start` (integer values) is handed to HiGHS as a partial
    solution (Highs.setSolution), which it completes and takes as its first incumbent if it is
    feasible; pulp's HiGHS takes no start, so its run step is extended (_HiGHSFrom).
    """
    import highspy

    limits = {"mip_max_nodes": max_nodes} if max_nodes else {}
    cmd = _HiGHSFrom(start or {}, msg=False, timeLimit=time_limit, gapRel=gap, threads=1, random_seed=seed,
                     **limits)
    try:
        lp.solve(cmd)
    except KeyError as exc:
        if not (exc.args and isinstance(exc.args[0], highspy.HighsModelStatus)):
            raise
    h = lp.solverModel
    ms = h.getModelStatus()
    info = h.getInfo()
    S = highspy.HighsModelStatus
    if ms in (S.kInfeasible, S.kUnboundedOrInfeasible):
        return "infeasible", None, None
    if ms == S.kUnbounded:
        return "unbounded", None, None
    # kSolutionStatusFeasible: HiGHS holds a plan (after a limit: the best it found)
    solution = h.getSolution()
    col_value = list(solution.col_value)
    variables = lp.variables()
    if info.primal_solution_status != 2 or not solution.value_valid or len(col_value) < len(variables):
        return "no_solution", None, None
    for var in variables:
        var.varValue = col_value[var.index]
    bound = getattr(info, "mip_dual_bound", None)
    mip_gap = getattr(info, "mip_gap", None)
    if bound is not None and not abs(bound) <= 1e300:
        bound = None
    if mip_gap is not None and not abs(mip_gap) <= 1e300:
        mip_gap = None
    # every other status (a time, node, solution, iteration or memory limit, an interrupt) with a
    # plan in hand: a plan, not a proof
    return ("optimal" if ms == S.kOptimal else "feasible"), bound, mip_gap


class HighsModel:
    """One HiGHS model of a Problem, built once and solved many times with different variables
    held: the improving rounds (improve.py) solve dozens of neighbourhoods of one large model,
    and building it through pulp each time cost several times what a round saves (here it is
    built once). Same conventions as solve(): the Problem's variable and row order, one thread,
    a fixed seed, values scaled by Variable.scale for HiGHS and back. Each solve starts from a
    cleared solver (no state carried between rounds), so a sequence of rounds is deterministic."""

    def __init__(self, problem: Problem, seed: int = DEFAULT.seed) -> None:
        import highspy
        import numpy as np

        self._np, self._highspy, self.seed = np, highspy, seed
        self.names = [v.name for v in problem.variables]
        self.index = {n: k for k, n in enumerate(self.names)}
        n = len(self.names)
        self.scale = np.array([v.scale for v in problem.variables], dtype=np.float64)
        self.cost = np.array([v.cost for v in problem.variables], dtype=np.float64) * self.scale
        self.lower = np.zeros(n)
        self.upper = np.array([1.0 if v.kind == "binary" else (np.inf if v.ub is None else v.ub / v.scale)
                               for v in problem.variables])
        self.integral = np.array([v.kind != "continuous" for v in problem.variables], dtype=np.uint8)
        starts, cols, vals, lo, up = [0], [], [], [], []
        for c in problem.constraints:
            for name, a in c.terms:
                k = self.index[name]
                cols.append(k)
                vals.append(a * self.scale[k])
            starts.append(len(cols))
            lo.append(-np.inf if c.sense == "<=" else c.rhs)
            up.append(np.inf if c.sense == ">=" else c.rhs)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, len(problem.constraints)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.cost, self.lower, self.upper
        lp.row_lower_, lp.row_upper_ = np.array(lo), np.array(up)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(cols, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(vals, dtype=np.float64)
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in self.integral]
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.passModel(lp)
        self._all = np.arange(n, dtype=np.int32)
        # HiGHS asks at its interrupt points whether to stop (interrupt()): a Ctrl-C during a
        # root of minutes then ends the compile at once. The callbacks cost nothing measurable.
        self._stop = False
        self._secondary = False     # the last solve minimised another objective than the cost
        self._stall: int | None = None
        self._stall_on_bound = True     # a rising bound, not only a cheaper plan, restarts the stall count
        self._moved: tuple[float, float, int] = (math.inf, -math.inf, 0)   # bounds, and the node they last moved at
        self._say: Callable[[str], None] | None = None    # a search's progress (solve's `progress`)
        self._said: tuple = ()
        self._budget = 0
        self._within: tuple[float, int] | None = None     # solve's `within`, and where it stands
        self._points, self._within_at = 0, None
        for event in ("cbSimplexInterrupt", "cbIpmInterrupt"):
            getattr(self.h, event).subscribe(self._interrupt_point)
        self.h.cbMipInterrupt.subscribe(self._mip_interrupt_point)

    def _interrupt_point(self, e) -> None:
        # set either way: HiGHS keeps the flag from the last run (one interrupted solve would
        # stop every later one at once)
        e.data_in.user_interrupt = self._stop

    def _mip_interrupt_point(self, e) -> None:
        """As _interrupt_point, and a search given `stall` stops once neither its plan nor its
        bound (its plan alone, without `stall_on_bound`) has moved in that many nodes: node counts
        and bounds at HiGHS's interrupt points are the same on every run (one thread, a fixed seed)."""
        stop = self._stop
        if self._stall is not None:
            out = e.data_out
            primal, dual, since = self._moved
            if out.mip_primal_bound < primal or (self._stall_on_bound and out.mip_dual_bound > dual):
                self._moved = (out.mip_primal_bound, out.mip_dual_bound, out.mip_node_count)
            else:
                stop = stop or out.mip_node_count - since >= self._stall
        if self._within is not None:
            stop = self._past_proof(e.data_out) or stop
        if self._say is not None:
            self._tell(e.data_out)
        e.data_in.user_interrupt = stop

    def _past_proof(self, out) -> bool:
        """Whether a search given `within` has gone its interrupt points past the first one at
        which its plan was proven within the gap."""
        gap, points = self._within
        self._points += 1
        plan, bound = out.mip_primal_bound, out.mip_dual_bound
        if self._within_at is None and abs(plan) < 1e300 and abs(bound) < 1e300 and relative_gap(plan, bound) <= gap:
            self._within_at = self._points
            if self._say is not None and points:
                self._say(f"branch-and-bound: plan proven within {gap:.0%}; at most {points:,} more cut rounds "
                          "and nodes toward the optimum's proof")
        return self._within_at is not None and self._points - self._within_at >= points

    def _tell(self, out) -> None:
        """A search's plan, bound and nodes, told where one of them moved (a status line: a
        search of minutes is not silent)."""
        now = (out.mip_node_count, out.mip_primal_bound, out.mip_dual_bound)
        if now == self._said:
            return
        self._said = now
        nodes, plan, bound = now
        budget = f" of {self._budget:,}" if self._budget else ""
        plan_text = f"plan ${plan:,.0f}" if abs(plan) < 1e300 else "no plan yet"
        bound_text = f", bound ${bound:,.0f}" if abs(bound) < 1e300 else ""
        self._say(f"branch-and-bound: node {nodes:,}{budget}; {plan_text}{bound_text}")

    def interrupt(self) -> None:
        """Stop the solve running on this model (from another thread) at its next interrupt point."""
        self._stop = True

    def solve(self, *, fixed: Mapping[str, float] | None = None, start: Mapping[str, float] | None = None,
              max_nodes: int | None = None, gap: float | None = None, relax: bool = False,
              time_limit: float | None = None, restart: bool = True, stall: int | None = None,
              stall_on_bound: bool = True, cut_pool: int = DEFAULT.cut_pool, improving: int | None = None,
              cutoff: float | None = None, within: tuple[float, int] | None = None,
              objective: Mapping[str, float] | None = None, progress: Callable[[str], None] | None = None
              ) -> Solution:
        """As solve(problem, solver="highs", ...); `relax`: every integer variable continuous
        (the LP relaxation); `restart`: HiGHS may restart its root after fixing variables
        (mip_allow_restart, its default); `stall`: the search stops (its plan reported feasible,
        with the bound it proved) once neither plan nor bound has moved in that many nodes, a
        budget that ends a search whose bound has stopped rising before its node limit does
        (`stall_on_bound` False: once its plan has not moved, whatever the bound does);
        `cut_pool`: the soft limit on HiGHS's pool of cuts (mip_pool_soft_limit); `improving`:
        the search stops at its `improving`-th improving plan (mip_max_improving_sols, a count, so
        where it stops is the same on every machine); `cutoff`: only plans cheaper than it are
        of use (objective_bound: HiGHS prunes the rest); `within` (gap, points): once the plan is
        proven within `gap` of the bound, the search stops after `points` more of HiGHS's interrupt
        points (a count, so where it stops is the same on every run); `objective`: minimise these coefficients
        (by variable name, the others 0) instead of the cost: the Solution's objective is still
        the plan's cost, its bound and gap mean nothing then (canonical.py's secondary
        objectives). All are set on every solve, since options persist on the model between
        solves. `progress` hears the search's node, plan and bound as they move."""
        np, h = self._np, self.h
        h.clearSolver()
        lower, upper = self.lower.copy(), self.upper.copy()
        if fixed:
            ks = np.array([self.index[n] for n in fixed], dtype=np.int32)
            held = np.array(list(fixed.values()), dtype=np.float64) / self.scale[ks]
            lower[ks] = upper[ks] = held
        n = len(self.names)
        h.changeColsBounds(n, self._all, lower, upper)
        h.changeColsIntegrality(n, self._all, np.zeros(n, dtype=np.uint8) if relax else self.integral)
        if objective is not None or self._secondary:
            cost = self.cost if objective is None else np.zeros(n)
            for name, w in (objective or {}).items():
                k = self.index[name]
                cost[k] = w * self.scale[k]
            h.changeColsCost(n, self._all, cost)
            self._secondary = objective is not None
        options = {"threads": 1, "random_seed": self.seed, "mip_max_nodes": int(max_nodes) if max_nodes else 2**31 - 1,
                   "mip_rel_gap": 1e-4 if gap is None else float(gap),
                   "time_limit": math.inf if time_limit is None else max(0.0, float(time_limit)),
                   "mip_allow_restart": bool(restart), "mip_pool_soft_limit": int(cut_pool),
                   "mip_max_improving_sols": int(improving) if improving else 2**31 - 1,
                   "objective_bound": math.inf if cutoff is None else float(cutoff)}
        for key, value in options.items():
            h.setOptionValue(key, value)
        if start and not relax:
            ks = [(self.index[n], x) for n, x in start.items() if n in self.index]
            _set_start(h, sorted((k, float(x) / self.scale[k]) for k, x in ks))
        t0 = time.perf_counter()
        self._stop, self._stall, self._moved = False, None if relax else stall, (math.inf, -math.inf, 0)
        self._stall_on_bound = stall_on_bound
        self._within, self._points, self._within_at = None if relax else within, 0, None
        self._say, self._said = (None if relax or objective is not None else progress), ()
        self._budget = int(max_nodes) if max_nodes else 0
        interruptible([self], h.run)
        seconds = time.perf_counter() - t0
        S = self._highspy.HighsModelStatus
        status, info = h.getModelStatus(), h.getInfo()
        if status in (S.kInfeasible, S.kUnboundedOrInfeasible):
            return Solution("highs", "infeasible", math.nan, math.nan, math.nan, seconds)
        if info.primal_solution_status != 2:
            return Solution("highs", "no_solution", math.nan, math.nan, math.nan, seconds)
        x = np.asarray(h.getSolution().col_value, dtype=np.float64)
        # an exactly rounded sum, not `cost @ x`: numpy hands a dot product to BLAS, whose kernel
        # (chosen by the CPU) sums in another order, and a last bit of a plan's cost can decide
        # the search's path: the same spec would give other plans on other machines
        obj = math.fsum((self.cost * x).tolist())
        values = dict(zip(self.names, (x * self.scale).tolist()))
        bound = obj if relax else getattr(info, "mip_dual_bound", None)
        if bound is None or not abs(bound) <= 1e300:
            bound = obj if status == S.kOptimal else 0.0    # as solve(): never the plan itself unproven
        bound = min(bound, obj)
        return Solution("highs", "optimal" if status == S.kOptimal else "feasible", obj, bound,
                        relative_gap(obj, bound), seconds, values)


def solve_all(jobs, left, workers: int | None = None, done=None):
    """Each (model, keyword arguments) solved, on threads where there are several (HiGHS
    releases the GIL while it runs): the same solves, and so the same plans, as one after
    another, in the time of the longest. `left()`: the seconds each may still take when it
    starts; `workers`: at most that many at once, each thread taking the next job as it is free;
    `done(model, solution)` is called as each job ends, on the thread that solved it."""
    def one(model, kwargs):
        sol = model.solve(time_limit=left(), **kwargs)
        if done is not None:
            done(model, sol)
        return sol

    if len(jobs) == 1 or workers == 1:
        return [one(model, kwargs) for model, kwargs in jobs]
    from concurrent.futures import ThreadPoolExecutor

    def every():
        with ThreadPoolExecutor(min(len(jobs), workers or len(jobs))) as pool:
            futures = [pool.submit(one, m, kw) for m, kw in jobs]
            return [f.result() for f in futures]

    # Ctrl-C stops every job's solve (a pool's shutdown would wait for them to finish)
    return interruptible([m for m, _kw in jobs], every)


class Running:
    """run() started at once on a daemon thread of its own (HiGHS releases the GIL, so it runs on a
    core the caller leaves idle); result() waits for it and returns or raises what run() did."""

    def __init__(self, run, name: str = "highs") -> None:
        self._box: list = []
        self._done = threading.Event()   # not Thread.join: a join cut short by Ctrl-C can return early after it
        threading.Thread(target=self._target, args=(run,), name=name, daemon=True).start()

    def _target(self, run) -> None:
        try:
            self._box.append((True, run()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller as it is
            self._box.append((False, e))
        finally:
            self._done.set()

    def result(self, models=()):
        """run()'s value, waited for. A KeyboardInterrupt meanwhile stops `models`' solves
        (HighsModel.interrupt), waits for run() to return where there are any, and is raised again;
        without models it is raised at once (the thread ends with the process)."""
        try:
            while not self._done.wait(0.1):
                pass
        except KeyboardInterrupt:
            for m in models:
                m.interrupt()
            if models:
                self._done.wait()
            raise
        ok, value = self._box[0]
        if not ok:
            raise value
        return value


def interruptible(models, run):
    """run() where Ctrl-C reaches the caller at once. HiGHS holds the thread that calls it until
    it returns (minutes, for a large platform's root), so on the main thread run() goes to a
    daemon thread and is waited for here; a KeyboardInterrupt stops `models`' solves
    (HighsModel.interrupt), waits for them to return and is raised again. Elsewhere run() runs
    as it is (the main thread is the one that hears Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():
        return run()
    return Running(run).result(models)
