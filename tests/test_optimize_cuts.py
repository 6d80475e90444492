"""The serving-demand cuts (compiler/optimize/cuts.py): valid for every integer point, and they
cut off the fractional points the LP relaxation would use."""

from __future__ import annotations

import itertools
import random

import pytest

from compiler.optimize.cuts import _pair_facets, row_cuts


def test_pair_facets_hand_worked():
    # 3 y1 + 5 y2 >= 7 in the box [0,3] x [0,2]: minimal points (0,2), (1,1), (2,1), (3,0);
    # the lower hull runs (0,2) -> (1,1) -> (3,0), so its facets are y1 + y2 >= 2 and y1 + 2 y2 >= 3.
    assert _pair_facets(3.0, 5.0, 3, 2, 7.0) == [(1, 1, 2), (1, 2, 3)]


def test_cuts_remove_the_lp_point():
    cuts = row_cuts((3.0, 5.0), (3, 2), 7.0)
    lp_point = (7 / 3, 0.0)         # cheapest fractional cover if y1 is cheaper per unit
    assert any(sum(a * y for a, y in zip(coef, lp_point)) < rhs - 1e-9 for coef, rhs in cuts)


@pytest.mark.parametrize("seed", range(40))
def test_cuts_hold_for_every_integer_point(seed):
    rng = random.Random(seed)
    n = rng.choice([2, 2, 3, 4])
    taus = tuple(round(rng.uniform(200, 4000), 3) for _ in range(n))
    demand = round(rng.uniform(100, 20000), 3)
    ubs = tuple(max(1, -(-int(demand) // int(t))) for t in taus)   # ceil(D / tau), as formulate sets
    cuts = row_cuts(taus, ubs, demand)
    for y in itertools.product(*(range(u + 1) for u in ubs)):
        if sum(t * v for t, v in zip(taus, y)) >= demand - 1e-9:
            for coef, rhs in cuts:
                assert sum(a * v for a, v in zip(coef, y)) >= rhs - 1e-6, (y, coef, rhs)
    # Each pair facet is tight at some integer point (a facet, not a loose bound).
    for coef, rhs in cuts:
        tight = min(sum(a * v for a, v in zip(coef, y))
                    for y in itertools.product(*(range(u + 1) for u in ubs))
                    if sum(t * v for t, v in zip(taus, y)) >= demand - 1e-9)
        assert tight == pytest.approx(rhs, abs=1e-6)


def test_rows_with_many_replicas_get_no_cuts():
    # A 4,000 rps service needs tens of replicas per site: lifting there took 47 s of formulate
    # for a 10-workload spec, for a bound gain of at most one replica in max_cut_replicas.
    from compiler.optimize import cuts
    from compiler.optimize.settings import DEFAULT
    many = DEFAULT.max_cut_replicas + 1
    assert cuts.row_cuts((1000.0, 1500.0, 700.0), (many, 12, 20), 16_500.0) == ()
    assert cuts.row_cuts((1000.0, 1500.0), (4, 3), 3_500.0) != ()


# --- whole-node covers (formulate._node_covers) and their MIR cuts (cuts.node_mirs) ---------

def test_node_mir_hand_worked():
    # A service needing 1.05 of a p5 node (cap 10) that could also use g6e nodes (cap 2):
    # 10 a + 2 b >= 10.5. With delta = 10: beta = 1.05, f = 0.05, G(1) = 1, G(0.2) = 1 - max(0,
    # 1 - 0.2 - 0.95) / 0.05 = 1: the cut a + b >= 2 ("two nodes, whatever they are"), which the
    # LP point (1.05, 0) violates. With delta = 2: beta = 5.25, f = 0.25, G(5) = 5, G(1) = 1:
    # 5 a + b >= 6 (one p5 and one g6e, or 6 g6e).
    from compiler.optimize.cuts import node_mirs
    cuts = dict((rhs, coef) for coef, rhs in node_mirs((10.0, 2.0), 10.5))
    assert cuts[2.0] == (1.0, 1.0)
    assert cuts[6.0] == (5.0, 1.0)


@pytest.mark.parametrize("seed", range(60))
def test_node_mirs_hold_for_every_integer_point(seed):
    from compiler.optimize.cuts import node_mirs
    rng = random.Random(1000 + seed)
    n = rng.choice([1, 2, 3, 4])
    caps = tuple(round(rng.uniform(0.5, 12.0), 3) for _ in range(n))
    demand = round(rng.uniform(0.5, 30.0), 3)
    caps = tuple(min(c, demand) for c in caps)        # as formulate writes the row
    box = [range(int(demand / c) + 3) for c in caps]
    for coef, rhs in node_mirs(caps, demand):
        for N in itertools.product(*box):
            if sum(c * v for c, v in zip(caps, N)) >= demand - 1e-9:
                assert sum(a * v for a, v in zip(coef, N)) >= rhs - 1e-6, (caps, demand, N, coef, rhs)


@pytest.mark.parametrize("seed", range(60))
def test_two_site_cover_holds_for_every_n_plus_1_point(seed):
    # cover[w@m/2]: sum_p min(D, 2 cap_p) N_p >= 2D for every whole-node vector that carries D
    # without any one site (formulate._node_covers has the proof); checked by enumeration.
    rng = random.Random(2000 + seed)
    sites = rng.choice([2, 3, 3, 4])
    pools = [(rng.randrange(sites), round(rng.uniform(0.2, 1.5), 3)) for _ in range(rng.choice([2, 3, 4, 5]))]
    D = 1.0
    box = [range(int(2 / cap) + 2) for _, cap in pools]
    seen = 0
    for N in itertools.product(*box):
        ok = all(sum(cap * v for (s, cap), v in zip(pools, N) if s != gone) >= D - 1e-9 for gone in range(sites))
        if ok:
            seen += 1
            assert sum(min(D, 2 * cap) * v for (_, cap), v in zip(pools, N)) >= 2 * D - 1e-9, (pools, N)
    assert seen or len({s for s, _ in pools}) < 2


def test_covers_make_the_lp_pay_for_whole_nodes():
    # One 99.9% service on three cloud sites, each with one pool whose node carries the demand
    # 1.05 times (a tp8 replica fills the node): the replica rows let the LP hold half a node at
    # each site (every N+1 row then sees 1.05 of the demand). formulate's covers say what every
    # plan does: two whole nodes in all (cover[w@m/2]), one outside each site (cover[w@m/-s]).
    import optimize_fixtures as OF
    from compiler.optimize.formulate import formulate, inode_name, y_name

    sites = [OF.cloud("aws-use1", index=0),
             OF.cloud("gcp-usc1", "us-central1", "gcp", index=1),
             OF.cloud("azure-eus", "eastus", "azure", index=2)]
    insts = {"aws-use1": "p5.48xlarge", "gcp-usc1": "a3-highgpu-8g", "azure-eus": "Standard_ND96isr_H100_v5"}
    w = OF.inference("chat", rps=10.0, out=100, availability=0.999)          # D = 1,000 tokens/s
    sp = OF.spec(sites, [w], horizon=1)
    problem = formulate(OF.candidates(sp, [OF.infer_cand(w, s, insts[s.name], 8, 1050.0) for s in sites]))
    rows = {c.name: c for c in problem.constraints}
    nodes = {s.name: inode_name(s.name, insts[s.name], 0) for s in sites}
    lp = {n: 0.5 for n in nodes.values()}

    def lhs(row):
        return sum(a * lp[n] for n, a in row.terms)

    cands = problem.chosen_from["chat"]
    lp.update({y_name(c, 0): 0.5 for c in cands})            # half a replica on half a node each
    for s in sites:     # the model's own N+1 and packing rows accept that point
        assert lhs(rows[f"survive[chat@000/-{s.name}]"]) >= 1000.0
        assert lhs(rows[f"packing[{s.name}/{insts[s.name]}@000]"]) >= 0.0
    two = rows["cover[chat@000/2]"]
    assert dict(two.terms) == {n: 1000.0 for n in nodes.values()} and two.rhs == 2000.0
    assert lhs(two) < two.rhs                                # ... and the two-site cover cuts it off
    for s in sites:
        one = rows[f"cover[chat@000/-{s.name}]"]
        assert dict(one.terms) == {nodes[o.name]: 1000.0 for o in sites if o is not s} and one.rhs == 1000.0
    assert not [n for n in rows if n.startswith("cover[chat@000/-") and "#mir" in n]   # already integral
