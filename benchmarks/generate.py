"""Generated platforms for the optimizer benchmark: N workloads over 6 sites and 36 months, seeded.

Candidates are made by hand (as the tests do), so the benchmark measures the optimizer alone:
about three quarters training jobs (weeks to months, 1-16 nodes, on-demand or spot, cloud or
on-prem) and one quarter inference services (some at 99.9% availability, growing traffic).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from optimize_fixtures import (candidates, cloud, infer_cand, inference, onprem, spec, train_cand,  # noqa: E402
                               training)

from compiler.candidates import Candidates  # noqa: E402


def sites():
    return [cloud("aws-use1", "us-east-1", "aws", ("on_demand", "spot", "reserved_1y", "reserved_3y"),
                  {"H100": 1024}, 0),
            cloud("aws-usw2", "us-west-2", "aws", ("on_demand", "spot", "reserved_1y"), {"H100": 512}, 1),
            cloud("gcp-usc1", "us-central1", "gcp", ("on_demand", "spot", "reserved_1y"), {}, 2),
            cloud("azure-eus", "eastus", "azure", ("on_demand", "reserved_1y"), {}, 3),
            onprem("dc1", power_kw=1500.0, usd_kwh=0.08, owned=[("dgx-h100", 8)], index=4),
            onprem("dc2", power_kw=800.0, usd_kwh=0.15, index=5)]


OPTIONS = {"aws-use1": ["p5.48xlarge", "p4de.24xlarge"], "aws-usw2": ["p5.48xlarge"],
           "gcp-usc1": ["a3-highgpu-8g"], "azure-eus": ["Standard_ND96isr_H100_v5"],
           "dc1": ["dgx-h100", "hgx-h100"], "dc2": ["hgx-h100"]}


def generate(n: int, seed: int = 0, horizon: int = 36) -> Candidates:
    rng = random.Random(seed)
    ss = sites()
    by_name = {s.name: s for s in ss}
    ws, cands = [], []
    for k in range(n):
        if rng.random() < 0.75:
            w = training(f"train-{k:03d}", index=k, start=rng.randrange(0, horizon - 1))
            ws.append(w)
            hours = rng.choice([120.0, 336.0, 730.0, 2190.0, 8760.0]) * rng.uniform(0.8, 1.2)
            nodes = rng.choice([1, 2, 4, 8, 16])
            for site in rng.sample(sorted(OPTIONS), 3):
                s = by_name[site]
                for inst in OPTIONS[site]:
                    for scale in (1, 2):
                        # twice the nodes: ~55% of the time (imperfect scaling)
                        h = hours / scale * 1.1 ** (scale - 1)
                        cands.append(train_cand(w, s, inst, nodes * scale, h))
                        if s.type == "cloud" and "spot" in s.pricing:
                            cands.append(train_cand(w, s, inst, nodes * scale, h * 1.15, spot=True))
        else:
            w = inference(f"serve-{k:03d}", index=k, rps=rng.choice([5, 20, 50]), out=rng.choice([100, 250]),
                          growth=rng.choice([0.0, 0.02, 0.05]), availability=rng.choice([0.99, 0.999]),
                          start=rng.randrange(0, horizon // 2))
            ws.append(w)
            for site in rng.sample(sorted(OPTIONS), 3):
                s = by_name[site]
                for inst in OPTIONS[site]:
                    for tp in (2, 4, 8):
                        cands.append(infer_cand(w, s, inst, tp, rng.uniform(250, 400) * tp ** 1.1))
    sp = spec(ss, ws, horizon=horizon)
    return candidates(sp, cands)
