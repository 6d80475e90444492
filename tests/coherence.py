"""The coherence oracle: do the rendered files implement the plan? (docs/artifacts.md)

`check(out_dir, catalog=None)` reads `plan.json` and the files `infra-compile SPEC -o DIR`
wrote beside it and returns every way the files break the contract of docs/artifacts.md, one
human-readable line each (empty: coherent). It is written from that page, not from the
renderers: it imports nothing from compiler.render (only compiler.plan.from_dict, to read
plan.json) and reads the files with real parsers -- python-hcl2 for Terraform, PyYAML for
Kubernetes, csv for the schedule and the BOM, Slurm's key=value syntax for slurm.conf and
`#SBATCH` lines, and its own expansion of Slurm hostlists (`prefix[01-08,10]`, comma lists).
Hardware figures (GPUs per node, GPU names, fabric and storage prices) come from the catalog's
data files (or a Catalog object): data, not renderer code.

Every line starts with the check that found it -- `slurm`, `capacity`, `schedule`,
`report`, `kubernetes`, `terraform`, `bom`, `references`, `serving`, `routing`, `launch`,
`files` -- then names the site, the object and the figures. `serving` and `launch` read what the
vLLM server and the training launcher are told (their command-line flags) against the plan's
layouts, batch, context length and quantization, and the serving choices its spec states
(plan.json's `inputs`: a prefix cache, speculative decoding), and the autoscaler's target
against the batch; a vision model's Triton server is read for its model repository, the
config.pbtxt a ConfigMap gives it (max_batch_size against the plan's batch, dynamic batching
within the latency bound, the GPU) and its readiness probe; `routing` asks that each service has
an InferencePool holding its servers, an endpoint picker behind it and an HTTPRoute from a
Gateway to it (a vision service: an HTTPRoute to Services of its Triton servers); `references`
asks that every object a manifest names is created beside it.

The model of the contract, computed from plan.json alone (a *block* is one pool: site,
instance, pricing; its *domain* is the instance slugged):
- `s[m]`: the sum of the Slurm training placements' holdings of the block in month m, at most
  `pool.monthly_nodes[m]` (two jobs may take turns on a node within a month);
- `k[m]`: the same sum over Kubernetes training placements and services, capped at
  `pool.monthly_nodes[m] - s[m]` (never below 0); of an elastic pricing, all of
  `pool.monthly_nodes[m] - s[m]` in a month Kubernetes holds any of it;
- static pricings (owned, purchase, reserved_*) are nodes 1..N (N = pool.nodes): Slurm's are
  1..max s, Kubernetes' N-max k+1..N (an orchestrator alone on a block gets all N), in month m
  Slurm uses 1..s[m] and Kubernetes N-k[m]+1..N;
- elastic pricings (on_demand, spot): Slurm's share is max s `State=CLOUD` nodes, Kubernetes'
  an autoscaled node group from min k to max k; a cloud static block whose two ranges meet
  ("changes hands") is elastic on both sides: `State=CLOUD`, node group from 0 to max k.

Readings of the contract where it leaves room (what a demanding ops engineer expects):
- Node names are `<domain>-<tag><NN>` with NN zero-padded to max(2, digits of N); a block's
  Slurm nodes are exactly its range (not merely that many), its on-prem Node objects exactly
  Kubernetes' range; fixed Slurm instances and fixed node groups count exactly their range.
- `Feature=` carries the block's pricing and no other pricing; `State=UNKNOWN` for static
  Slurm nodes, `State=CLOUD` for elastic ones, nothing else.
- The sbatch's `--constraint` lists exactly the pricings its placement holds nodes of in any
  month; `--gpus-per-node=<type>:<n>` needs n GPUs of that type on each node.
- A schedule month no row covers means 0 (rows for zero spans may be left out); rows must not
  overlap, and two adjacent rows of one object with the same count should be one span.
- A node group's min/max are exact: static blocks fixed at the size of Kubernetes' range
  (min = max), elastic ones min k..max k, static cloud blocks that change hands 0..max k. The capacity check only asks
  max >= max k; the Terraform check asks the exact figures.
- The HPA's bounds are the first month with replicas: maxReplicas = that month's replicas,
  minReplicas = min(2, that); the Deployment's replicas are month 0's.
- A replica over several nodes (wide expert parallelism) is one group of a LeaderWorkerSet: its
  pods (size) x GPUs a pod are the placement's GPUs a replica, its leader serves the API and the
  InferencePool selects the leaders only; it is read as a Deployment of its leaders otherwise.
- Deployments of a domain must fit, month by month, into the nodes Kubernetes holds there (the
  sum of k[m] over the domain's blocks), packed first-fit decreasing by GPUs (a LeaderWorkerSet
  replica: its pods, each packed alone). Kubernetes
  training is not subtracted: the plan lets a job and services take turns on nodes within a
  month (node-hours), which whole-month figures cannot show.
- The ClusterQueue's GPU quota of a flavor is exactly the most GPUs Kubernetes training holds
  of that block in one month (the sum of the jobs' holdings), at most the block's N nodes' GPUs
  (jobs that take turns on a node within a month count once), or a JobSet part's GPUs where one
  part is larger; a JobSet's replicated job `w-<pricing tag>` has as many pods as the placement holds
  nodes of that pricing in its first month with nodes. Where that month's holdings add up to
  more than the job's nodes (it moves between pricings within the month), the pods must add up
  to the job's nodes, of pricings it holds that month.
- The BOM's fabric is what the plan priced: per bought node, ports x cost_per_port plus
  3 x ports / radix x switch cost (switches in fractions, not rounded up to whole boxes);
  owned nodes bring no fabric. Storage lines give ceil(capacity) TB at the tier's capex.
"""

from __future__ import annotations

import ast
import csv
import functools
import itertools
import io
import json
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import hcl2
import yaml

ROOT = Path(__file__).resolve().parents[1]
CATALOG_DATA = ROOT / "compiler" / "catalog" / "data"

PRICINGS = ("owned", "purchase", "reserved_3y", "reserved_1y", "on_demand", "spot")
STATIC = frozenset({"owned", "purchase", "reserved_3y", "reserved_1y"})
RESERVED = frozenset({"reserved_1y", "reserved_3y"})
TAGS = {"owned": "own", "purchase": "buy", "reserved_3y": "r3y", "reserved_1y": "r1y",
        "on_demand": "od", "spot": "spot"}
TAG_PRICING = {t: p for p, t in TAGS.items()}

POOL_LABEL = "infra-compile.io/pool"
PRICING_LABEL = "infra-compile.io/pricing"
MONTHS_ANNOTATION = "infra-compile.io/months"
REPLICAS_ANNOTATION = "infra-compile.io/monthly-replicas"
# A disaggregated service's servers (docs/artifacts.md): pods labelled by role, each role's
# Deployment the placement's units x its instances a unit, at its own tensor parallel; prefill
# servers take one prompt at a time; both are told vLLM's NixlConnector.
ROLE_LABEL = "llm-d.ai/role"
PD_ROLES = ("prefill", "decode")
PD_CONNECTOR = "NixlConnector"
PD_PREFILL_BATCH = 1
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT = ("nvidia.com/gpu", "present", "NoSchedule")
RESUME_PROGRAM = "/etc/slurm/resume.sh"
SUSPEND_PROGRAM = "/etc/slurm/suspend.sh"
SCHEDULE_COLUMNS = ["site", "month_first", "month_last", "kind", "orchestrator", "domain", "pricing",
                    "object", "count", "nodes"]
DATED_SCHEDULE_COLUMNS = ["calendar_first", "calendar_last"]
MONEY_TOL = 1.0          # USD: BOM figures are written in cents; fractions of switches round


def slug(text: str) -> str:
    """Lowercase, runs of other characters become `-` (docs/artifacts.md, "Scheduling domains")."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


# --- catalog figures ------------------------------------------------------------------------

@dataclass(frozen=True)
class Machine:
    name: str
    gpu: str
    gpus: int
    provider: str            # aws | gcp | azure | on_prem
    capex_usd: float = 0.0


@dataclass(frozen=True)
class FabricFigures:
    ports_per_node: int
    cost_per_port_usd: float
    switch_radix: int
    switch_cost_usd: float

    def per_node_usd(self) -> float:
        return (self.ports_per_node * self.cost_per_port_usd
                + 3 * self.ports_per_node / self.switch_radix * self.switch_cost_usd)


@dataclass(frozen=True)
class Hardware:
    machines: dict[str, Machine]
    fabrics: dict[str, FabricFigures]
    storage: dict[str, tuple[str, float]]      # tier -> (provider, capex per TB)


@functools.lru_cache(maxsize=4)
def _data_sections(files: tuple[tuple[str, str], ...]) -> dict[str, dict]:
    """The instances, on-prem nodes, fabrics and storage tiers of catalog data files ((name,
    text) in order), the later file's entry winning: parsed once for the same texts (a quarter of
    a second of YAML, and every check of a run reads the same files). Read only: hardware()
    copies what it keeps."""
    raw: dict[str, dict] = {"instances": {}, "onprem_nodes": {}, "fabrics": {}, "storage": {}}
    for _name, text in files:
        data = yaml.safe_load(text) or {}
        for section in raw:
            raw[section].update(data.get(section) or {})
    return raw


def hardware(catalog: Any = None) -> Hardware:
    """The figures this oracle needs, from a Catalog object, a directory of catalog data files
    (compiler/catalog/data layout), or None: the shipped data files, read as plain YAML."""
    if catalog is None or isinstance(catalog, (str, Path)):
        folder = Path(catalog) if catalog is not None else CATALOG_DATA
        raw = _data_sections(tuple((path.name, path.read_text(encoding="utf-8"))
                                   for path in sorted(folder.glob("*.yaml"))))
        machines = {n: Machine(n, r["gpu"], int(r["gpus"]), r["provider"]) for n, r in raw["instances"].items()}
        machines.update({n: Machine(n, r["gpu"], int(r["gpus"]), "on_prem", float(r["capex_usd"]))
                         for n, r in raw["onprem_nodes"].items()})
        fabrics = {n: FabricFigures(int(r["ports_per_node"]), float(r["cost_per_port_usd"]),
                                    int(r["switch_radix"]), float(r["switch_cost_usd"]))
                   for n, r in raw["fabrics"].items()}
        storage = {n: (r["provider"], float(r["capex_usd_per_tb"])) for n, r in raw["storage"].items()}
        return Hardware(machines, fabrics, storage)
    machines = {n: Machine(n, i.gpu, int(i.gpus), i.provider) for n, i in catalog.instances.items()}
    machines.update({n: Machine(n, o.gpu, int(o.gpus), "on_prem", float(o.capex_usd))
                     for n, o in catalog.onprem_nodes.items()})
    fabrics = {n: FabricFigures(int(f.ports_per_node), float(f.cost_per_port_usd), int(f.switch_radix),
                                float(f.switch_cost_usd)) for n, f in catalog.fabrics.items()}
    storage = {n: (s.provider, float(s.capex_usd_per_tb)) for n, s in catalog.storage.items()}
    return Hardware(machines, fabrics, storage)


# --- parsers ----------------------------------------------------------------------------------

def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def expand_hostlist(text: str) -> list[str]:
    """Slurm hostlist -> host names: `gpu[01-03,07]`, `a[1-2]-b[1-2]`, `x01,y[3-4]`."""
    out: list[str] = []
    for part in _split_top(text or ""):
        out.extend(_expand_one(part))
    return out


def _expand_one(text: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", text)
    if not m:
        if "[" in text or "]" in text:
            raise ValueError(f"unbalanced brackets in hostlist {text!r}")
        return [text] if text else []
    pre, body, post = text[:m.start()], m.group(1), text[m.end():]
    numbers: list[str] = []
    for rng in body.split(","):
        rng = rng.strip()
        if not rng:
            continue
        if "-" in rng:
            a, b = rng.split("-", 1)
            if not (a.isdigit() and b.isdigit()) or int(b) < int(a):
                raise ValueError(f"bad range {rng!r} in hostlist {text!r}")
            numbers += [f"{i:0{len(a)}d}" for i in range(int(a), int(b) + 1)]
        elif rng.isdigit():
            numbers.append(rng)
        else:
            raise ValueError(f"bad hostlist element {rng!r} in {text!r}")
    rest = _expand_one(post) if post else [""]
    return [pre + n + r for n in numbers for r in rest]


@dataclass
class SlurmConf:
    options: dict[str, str]                 # global key (lowercase) -> value
    nodes: list[dict[str, str]]             # one dict per NodeName line (keys lowercase)
    partitions: list[dict[str, str]]


def parse_slurm_conf(text: str) -> SlurmConf:
    """slurm.conf's key=value syntax: `#` starts a comment, a line holds whitespace-separated
    pairs, NodeName= / PartitionName= lines define nodes and partitions (DEFAULT lines apply to
    the lines after them)."""
    conf = SlurmConf({}, [], [])
    node_default: dict[str, str] = {}
    part_default: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pairs: dict[str, str] = {}
        for tok in shlex.split(line, posix=True):
            key, eq, value = tok.partition("=")
            if not eq:
                if key.lower() == "include":
                    break
                raise ValueError(f"not a key=value pair: {tok!r} in line {raw!r}")
            pairs[key.lower()] = value
        if not pairs:
            continue
        first = next(iter(pairs))
        if first == "nodename":
            if pairs["nodename"].upper() == "DEFAULT":
                node_default.update({k: v for k, v in pairs.items() if k != "nodename"})
            else:
                conf.nodes.append({**node_default, **pairs})
        elif first == "partitionname":
            if pairs["partitionname"].upper() == "DEFAULT":
                part_default.update({k: v for k, v in pairs.items() if k != "partitionname"})
            else:
                conf.partitions.append({**part_default, **pairs})
        else:
            conf.options.update(pairs)
    return conf


SBATCH_SHORT = {"p": "partition", "N": "nodes", "C": "constraint", "G": "gpus", "J": "job-name",
                "n": "ntasks", "c": "cpus-per-task", "t": "time", "o": "output"}


def parse_sbatch(text: str) -> dict[str, str]:
    """The `#SBATCH` options of a batch script (sbatch stops reading them at the first line
    that is neither a comment nor blank)."""
    opts: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#SBATCH"):
            args = shlex.split(line[len("#SBATCH"):])
            i = 0
            while i < len(args):
                a = args[i]
                if a.startswith("--"):
                    key, eq, value = a[2:].partition("=")
                    if not eq and i + 1 < len(args) and not args[i + 1].startswith("-"):
                        value = args[i + 1]
                        i += 1
                    opts[key] = value
                elif a.startswith("-") and len(a) >= 2:
                    key = SBATCH_SHORT.get(a[1], a[1])
                    value = a[2:]
                    if not value and i + 1 < len(args) and not args[i + 1].startswith("-"):
                        value = args[i + 1]
                        i += 1
                    opts[key] = value
                i += 1
        elif not line or line.startswith("#"):
            continue
        else:
            break
    return opts


def constraint_alternatives(text: str) -> list[set[str]]:
    """`a|b` (OR), `a&b` / `a,b` (AND), brackets dropped: a list of feature sets, any of which
    a node must carry all of."""
    text = text.replace("[", "").replace("]", "")
    return [set(f for f in re.split(r"[&,]", alt) if f) for alt in text.split("|") if alt]


HCL_OPTIONS = hcl2.SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True,
                                        preserve_heredocs=False)


def parse_hcl(text: str) -> dict:
    return hcl2.loads(text, serialization_options=HCL_OPTIONS)


def parse_ranges(text: str) -> set[int]:
    """Months written as `0-3, 7` (or `0,1,2`): the set of ints."""
    out: set[int] = set()
    for a, b in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", str(text)):
        out.update(range(int(a), int(b or a) + 1))
    return out


def parse_int_list(text: Any) -> list[int] | None:
    if isinstance(text, list):
        items = text
    else:
        s = str(text).strip()
        try:
            items = json.loads(s) if s.startswith("[") else [x for x in re.split(r"[,\s]+", s) if x]
        except ValueError:
            return None
    try:
        return [int(x) for x in items]
    except (TypeError, ValueError):
        return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _money(value: Any) -> float | None:
    try:
        return float(str(value).replace(",", "").replace("$", "").strip())
    except ValueError:
        return None


# --- the plan, as the contract sees it -----------------------------------------------------

@dataclass
class Block:
    site: str
    cloud: bool
    provider: str | None
    instance: str
    domain: str
    pricing: str
    nodes: int                    # N: the pool's nodes
    gpu: str
    gpus_per_node: int
    fabric: str
    pool_monthly: list[int]
    s: list[int]                  # Slurm's nodes per month
    k: list[int]                  # Kubernetes' nodes per month (capped)
    k_train: list[int] = field(default_factory=list)   # Kubernetes training holdings per month

    @property
    def static(self) -> bool:
        return self.pricing in STATIC

    @property
    def s_peak(self) -> int:
        return max(self.s, default=0)

    @property
    def k_peak(self) -> int:
        return max(self.k, default=0)

    @property
    def k_min(self) -> int:
        return min(self.k, default=0)

    @property
    def slurm_range(self) -> tuple[int, int]:
        """Slurm's node indices (first, last): 1..max s, or all N of a static block when
        Slurm is alone on it; (1, 0): none."""
        if not self.s_peak:
            return (1, 0)
        if self.static and not self.k_peak:
            return (1, self.nodes)
        return (1, self.s_peak)

    @property
    def k8s_range(self) -> tuple[int, int]:
        """Kubernetes' node indices: N-max k+1..N, or all N of a static block when Kubernetes is
        alone on it (elastic blocks: 1..max k, a node group's count)."""
        if not self.k_peak:
            return (1, 0)
        if not self.static:
            return (1, self.k_peak)
        if not self.s_peak:
            return (1, self.nodes)
        return (self.nodes - self.k_peak + 1, self.nodes)

    @staticmethod
    def size(span: tuple[int, int]) -> int:
        return max(0, span[1] - span[0] + 1)

    @property
    def handover(self) -> bool:
        """Static nodes that change hands: Slurm's 1..max s meets Kubernetes' N-max k+1..N."""
        return self.static and self.s_peak > 0 and self.k_peak > 0 and self.s_peak + self.k_peak > self.nodes

    @property
    def elastic(self) -> bool:
        """Started and stopped as needed: elastic pricings, and cloud static blocks that change hands."""
        return not self.static or (self.cloud and self.handover)

    @property
    def tag(self) -> str:
        return TAGS.get(self.pricing, slug(self.pricing))

    @property
    def flavor(self) -> str:
        return f"{self.domain}-{slug(self.pricing)}"

    @property
    def width(self) -> int:
        return max(2, len(str(self.nodes)))

    def name(self, i: int) -> str:
        return f"{self.domain}-{self.tag}{i:0{self.width}d}"

    def names(self, first: int, last: int) -> set[str]:
        return {self.name(i) for i in range(first, last + 1)}

    @property
    def label(self) -> str:
        return f"{self.site}/{self.domain}/{self.pricing}"


def _series(values: Iterable, months: int) -> list[int]:
    out = [int(round(v)) for v in values][:months]
    return out + [0] * (months - len(out))


def orchestrator_of(w) -> str:
    return "kubernetes" if w.kind == "inference" else w.orchestrator


def holdings_of(p, months: int) -> dict[str, list[int]]:
    """pricing -> nodes held per month (a placement without holdings: its pricing, every month)."""
    out: dict[str, list[int]] = {}
    if p.holdings:
        for h in p.holdings:
            series = _series(h.monthly_nodes, months)
            prev = out.setdefault(h.pricing, [0] * months)
            out[h.pricing] = [a + b for a, b in zip(prev, series)]
    else:
        out[p.pricing] = [p.nodes] * months
    return out


class Context:
    """One output folder, its plan and its files; parsed lazily, once each."""

    def __init__(self, out_dir: Path, hw: Hardware):
        from compiler.plan import from_dict

        self.out = Path(out_dir)
        self.hw = hw
        self.plan = from_dict(json.loads((self.out / "plan.json").read_text(encoding="utf-8")))
        self.months = int(self.plan.horizon_months)
        self.sites = {s.name: s for s in self.plan.sites}
        self.problems: list[str] = []
        self._cache: dict[tuple, Any] = {}
        self.blocks: dict[tuple[str, str, str], Block] = {}      # (site, domain, pricing)
        self.domain_instance: dict[tuple[str, str], str] = {}
        for pool in self.plan.pools:
            site = self.sites.get(pool.site)
            cloud = bool(site and site.type == "cloud")
            domain = slug(pool.instance)
            other = self.domain_instance.setdefault((pool.site, domain), pool.instance)
            if other != pool.instance:
                self.problems.append(f"files: {pool.site}: instances {other} and {pool.instance} share the "
                                     f"domain name {domain}")
            pool_monthly = (_series(pool.monthly_nodes, self.months) if pool.monthly_nodes
                            else [pool.nodes] * self.months)
            if (pool.site, domain, pool.pricing) in self.blocks:
                self.problems.append(f"capacity: plan.json has two {pool.pricing} pools of {pool.instance} at "
                                     f"{pool.site}")
            self.blocks[(pool.site, domain, pool.pricing)] = Block(
                site=pool.site, cloud=cloud, provider=site.provider if site else None, instance=pool.instance,
                domain=domain, pricing=pool.pricing, nodes=int(pool.nodes), gpu=pool.gpu,
                gpus_per_node=int(pool.gpus_per_node), fabric=pool.fabric, pool_monthly=pool_monthly,
                s=[0] * self.months, k=[0] * self.months, k_train=[0] * self.months)
        k_sum: dict[tuple, list[int]] = {key: [0] * self.months for key in self.blocks}
        for w in self.plan.workloads:
            orch = orchestrator_of(w)
            for p in w.placements:
                for pricing, series in holdings_of(p, self.months).items():
                    key = (p.site, slug(p.instance), pricing)
                    if key not in self.blocks:
                        if any(series):
                            self.problems.append(f"capacity: plan.json: {w.name} holds {p.instance} {pricing} nodes "
                                                 f"at {p.site} but the plan has no such pool")
                        continue
                    b = self.blocks[key]
                    if orch == "slurm":
                        b.s = [a + x for a, x in zip(b.s, series)]
                    else:
                        k_sum[key] = [a + x for a, x in zip(k_sum[key], series)]
                        if w.kind == "training":
                            b.k_train = [a + x for a, x in zip(b.k_train, series)]
        for key, b in self.blocks.items():
            b.s = [min(x, b.pool_monthly[m]) for m, x in enumerate(b.s)]
            free = [max(0, b.pool_monthly[m] - b.s[m]) for m in range(len(b.s))]
            b.k = [(min(h, free[m]) if b.pricing in STATIC else free[m]) if h else 0
                   for m, h in enumerate(k_sum[key])]

    # -- plan views --
    def site_blocks(self, site: str) -> list[Block]:
        order = {p: i for i, p in enumerate(PRICINGS)}
        return sorted((b for b in self.blocks.values() if b.site == site),
                      key=lambda b: (b.domain, order.get(b.pricing, 99)))

    def placements(self, site: str, orchestrator: str, kind: str | None = None):
        for w in self.plan.workloads:
            if orchestrator_of(w) != orchestrator or (kind and w.kind != kind):
                continue
            for p in w.placements:
                if p.site == site:
                    yield w, p

    def uses(self, site: str, orchestrator: str) -> bool:
        return any((b.s_peak if orchestrator == "slurm" else b.k_peak) > 0 for b in self.site_blocks(site))

    def gpus_of(self, instance: str) -> int | None:
        m = self.hw.machines.get(instance)
        return m.gpus if m else None

    # -- files --
    def path(self, rel: str) -> Path:
        return self.out / rel

    def text(self, rel: str) -> str | None:
        p = self.out / rel
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def _cached(self, key: tuple, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def slurm_conf(self, site: str) -> SlurmConf | None:
        def make():
            text = self.text(f"slurm/{site}/slurm.conf")
            if text is None:
                return None
            try:
                return parse_slurm_conf(text)
            except ValueError as exc:
                self.problems.append(f"slurm: {site}: slurm.conf does not parse: {exc}")
                return None
        return self._cached(("slurm", site), make)

    def slurm_nodes(self, site: str) -> dict[str, dict[str, str]]:
        """Node name -> its NodeName line's keys."""
        def make():
            out: dict[str, dict[str, str]] = {}
            conf = self.slurm_conf(site)
            for line in conf.nodes if conf else ():
                try:
                    names = expand_hostlist(line["nodename"])
                except ValueError as exc:
                    self.problems.append(f"slurm: {site}: slurm.conf: NodeName={line['nodename']}: {exc}")
                    continue
                for n in names:
                    if n in out:
                        self.problems.append(f"slurm: {site}: slurm.conf defines node {n} twice")
                    out[n] = line
            return out
        return self._cached(("slurm_nodes", site), make)

    def k8s_docs(self, site: str) -> list[tuple[str, dict]]:
        def make():
            folder = self.out / "kubernetes" / site
            docs: list[tuple[str, dict]] = []
            if not folder.is_dir():
                return docs
            for path in sorted(folder.rglob("*")):
                if path.suffix not in (".yaml", ".yml") or not path.is_file():
                    continue
                rel = str(path.relative_to(self.out))
                try:
                    loaded = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
                except yaml.YAMLError as exc:
                    self.problems.append(f"kubernetes: {rel} does not parse: {exc}")
                    continue
                for d in loaded:
                    if isinstance(d, dict) and d.get("kind") == "List":
                        docs += [(rel, x) for x in d.get("items") or () if isinstance(x, dict)]
                    elif isinstance(d, dict):
                        docs.append((rel, d))
            return docs
        return self._cached(("k8s", site), make)

    def k8s_kind(self, site: str, kind: str) -> list[tuple[str, dict]]:
        return [(f, d) for f, d in self.k8s_docs(site) if d.get("kind") == kind]

    def schedule(self, site: str) -> list[dict[str, str]] | None:
        def make():
            text = self.text(f"schedule/{site}.csv")
            if text is None:
                return None
            reader = csv.DictReader(io.StringIO(text))
            # a dated plan (a spec with `start`) adds the spans' calendar months after them
            want = SCHEDULE_COLUMNS + (DATED_SCHEDULE_COLUMNS if getattr(self.plan, "start", None) else [])
            if reader.fieldnames != want:
                self.problems.append(f"schedule: {site}: schedule/{site}.csv has columns {reader.fieldnames}, "
                                     f"the contract's are {want}")
            return list(reader)
        return self._cached(("schedule", site), make)

    def terraform(self, site: str) -> list["TfResource"]:
        def make():
            folder = self.out / "terraform" / site
            out: list[TfResource] = []
            if not folder.is_dir():
                return out
            for path in sorted(folder.glob("*.tf")):
                rel = str(path.relative_to(self.out))
                try:
                    data = parse_hcl(path.read_text(encoding="utf-8"))
                except Exception as exc:  # noqa: BLE001 - any parse error is a finding
                    self.problems.append(f"terraform: {rel} does not parse: {exc}")
                    continue
                for entry in data.get("resource") or ():
                    for rtype, labelled in entry.items():
                        for label, body in labelled.items():
                            out.append(TfResource(rtype, label, body if isinstance(body, dict) else {}, rel))
            return out
        return self._cached(("tf", site), make)

    def tf_months(self, site: str) -> list[dict[str, Any]]:
        """The Terraform variables in force in each month: variables.tf's defaults, overlaid with
        the last terraform/<site>/months/NNN.tfvars at or before the month (NNN: the month)."""
        def make():
            folder = self.out / "terraform" / site
            defaults: dict[str, Any] = {}
            text = self.text(f"terraform/{site}/variables.tf")
            if text is not None:
                try:
                    for entry in parse_hcl(text).get("variable") or ():
                        for name, body in entry.items():
                            if isinstance(body, dict) and "default" in body:
                                defaults[_unquote(name)] = _unquote_keys(body["default"])
                except Exception:  # noqa: BLE001 - reported by the terraform() parse
                    pass
            files: dict[int, dict[str, Any]] = {}
            for path in sorted((folder / "months").glob("*.tfvars")) if (folder / "months").is_dir() else ():
                rel = str(path.relative_to(self.out))
                if not re.fullmatch(r"\d+", path.stem):
                    self.problems.append(f"terraform: {rel}: a month file is named by its month (NNN.tfvars)")
                    continue
                try:
                    files[int(path.stem)] = {_unquote(k): _unquote_keys(v)
                                             for k, v in parse_hcl(path.read_text(encoding="utf-8")).items()}
                except Exception as exc:  # noqa: BLE001 - a parse error is a finding
                    self.problems.append(f"terraform: {rel} does not parse: {exc}")
            if files and 0 not in files:
                self.problems.append(f"terraform: {site}: no months/000.tfvars: the first apply has no month file")
            out, current = [], dict(defaults)
            for m in range(self.months):
                if m in files:
                    current = {**defaults, **files[m]}
                out.append(current)
            return out
        return self._cached(("tf_months", site), make)

    def schedule_map(self, site: str):
        """(kind, orchestrator, domain, pricing or object) -> {month: (count, nodes text)} and the
        problems found reading the rows."""
        def make():
            rows = self.schedule(site) or []
            out: dict[tuple, dict[int, tuple[int, str]]] = {}
            spans: dict[tuple, list[tuple[int, int, int, str]]] = {}
            for i, r in enumerate(rows, start=2):
                where = f"schedule: {site}: schedule/{site}.csv line {i}"
                first, last, count = _as_int(r.get("month_first")), _as_int(r.get("month_last")), _as_int(r.get("count"))
                if first is None or last is None or count is None:
                    self.problems.append(f"{where}: month_first/month_last/count are not integers: {r}")
                    continue
                if r.get("site") != site:
                    self.problems.append(f"{where}: site column says {r.get('site')!r}")
                if not 0 <= first <= last < self.months:
                    self.problems.append(f"{where}: months {first}..{last} are not inside the horizon "
                                         f"0..{self.months - 1}")
                kind = r.get("kind")
                if kind == "nodes":
                    key = ("nodes", r.get("orchestrator"), r.get("domain"), r.get("pricing"))
                    if r.get("orchestrator") not in ("slurm", "kubernetes"):
                        self.problems.append(f"{where}: orchestrator {r.get('orchestrator')!r} is neither slurm "
                                             f"nor kubernetes")
                elif kind == "replicas":
                    key = ("replicas", r.get("orchestrator"), r.get("domain"), r.get("object"))
                else:
                    self.problems.append(f"{where}: kind {kind!r} is neither nodes nor replicas")
                    continue
                months = out.setdefault(key, {})
                spans.setdefault(key, []).append((first, last, count, r.get("nodes") or ""))
                for m in range(first, last + 1):
                    if m in months:
                        self.problems.append(f"{where}: {key[1]} {key[2]} {key[3]}: month {m} is in two rows")
                    months[m] = (count, r.get("nodes") or "")
            for key, ss in spans.items():
                ss.sort()
                for (a1, b1, c1, n1), (a2, b2, c2, n2) in zip(ss, ss[1:]):
                    if b1 + 1 == a2 and c1 == c2 and n1 == n2:
                        self.problems.append(f"schedule: {site}: {key[0]} rows of {key[1]} {key[2]} {key[3]} for "
                                             f"months {a1}-{b1} and {a2}-{b2} carry the same value ({c1}): one span "
                                             f"is one row")
            return out
        return self._cached(("schedule_map", site), make)


def _unquote(text: Any) -> Any:
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def _unquote_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {_unquote(k): _unquote_keys(v) for k, v in value.items() if k != "__is_block__"}
    if isinstance(value, list):
        return [_unquote_keys(v) for v in value]
    return _unquote(value)


_VAR_REF = re.compile(r'var\.(\w+)(?:\["([^"]*)"\]|\.(\w+))?')
_TERNARY = re.compile(r"^(.*?)\?(.*):(.*)$", re.S)
_SAFE_NODES = (ast.Expression, ast.Constant, ast.Compare, ast.IfExp, ast.BinOp, ast.UnaryOp, ast.BoolOp,
               ast.Gt, ast.GtE, ast.Lt, ast.LtE, ast.Eq, ast.NotEq, ast.Add, ast.Sub, ast.Mult, ast.USub,
               ast.And, ast.Or)


def tf_number(value: Any, variables: dict[str, Any]) -> int | None:
    """A count or size as Terraform would evaluate it with the month's variables: a number, or an
    arithmetic expression of `var.x`, `var.m["k"]`, `var.m.k`, comparisons and `c ? a : b`.
    None: anything else (an unknown variable or key among them)."""
    n = _as_int(value)
    if n is not None or not isinstance(value, str):
        return n
    m = re.fullmatch(r"\$\{(.*)\}", value.strip(), re.S)
    if not m:
        return None
    expr = m.group(1)
    missing = False

    def sub(ref: re.Match) -> str:
        nonlocal missing
        v = variables.get(ref.group(1))
        key = ref.group(2) if ref.group(2) is not None else ref.group(3)
        if key is not None:
            v = v.get(key) if isinstance(v, dict) else None
        if _as_int(v) is None:
            missing = True
            return "0"
        return str(_as_int(v))

    expr = _VAR_REF.sub(sub, expr)
    if missing:
        return None
    t = _TERNARY.match(expr)
    if t:
        expr = f"({t.group(2)}) if ({t.group(1)}) else ({t.group(3)})"
    try:
        tree = ast.parse(expr.replace("&&", " and ").replace("||", " or "), mode="eval")
    except SyntaxError:
        return None
    if not all(isinstance(node, _SAFE_NODES) for node in ast.walk(tree)):
        return None
    result = eval(compile(tree, "<terraform>", "eval"), {"__builtins__": {}}, {})  # noqa: S307 - checked nodes
    return _as_int(int(result) if isinstance(result, bool) else result)


def _var_key(value: Any, variable: str) -> str | None:
    """The map key an expression reads from `var.<variable>` (None: it reads none)."""
    for ref in _VAR_REF.finditer(str(value)):
        if ref.group(1) == variable:
            return ref.group(2) if ref.group(2) is not None else ref.group(3)
    return None


# --- Terraform resources -----------------------------------------------------------------

NODE_GROUPS = {"aws_eks_node_group", "google_container_node_pool", "azurerm_kubernetes_cluster_node_pool"}
INSTANCES = {"aws_autoscaling_group", "google_compute_instance", "azurerm_linux_virtual_machine_scale_set",
             "azurerm_orchestrated_virtual_machine_scale_set", "azurerm_windows_virtual_machine_scale_set"}
TEMPLATES = {"aws_launch_template", "google_compute_instance_template"}
RESERVATIONS = {"aws_ec2_capacity_reservation", "google_compute_reservation", "azurerm_capacity_reservation"}


def _first(body: Any, *keys: str) -> Any:
    """body[k1][0][k2]...: blocks come as lists of dicts."""
    cur = body
    for k in keys:
        if isinstance(cur, list):
            cur = cur[0] if cur else None
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    if isinstance(cur, list) and len(cur) == 1 and isinstance(cur[0], dict):
        return cur[0]
    return cur


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _dicts(value: Any) -> Iterable[dict]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _dicts(v)


@dataclass
class TfResource:
    type: str
    label: str
    body: dict
    file: str

    @property
    def address(self) -> str:
        return f"{self.file}: {self.type}.{self.label}"

    def refers_to(self, other: "TfResource") -> bool:
        needle = f"{other.type}.{other.label}."
        return any(needle in s for s in _strings(self.body))

    def labels(self) -> dict:
        if self.type == "aws_eks_node_group":
            v = self.body.get("labels")
        elif self.type == "google_container_node_pool":
            v = _first(self.body, "node_config", "labels")
        elif self.type == "azurerm_kubernetes_cluster_node_pool":
            v = self.body.get("node_labels")
        else:
            v = self.body.get("labels") or self.body.get("tags")
        return v if isinstance(v, dict) else {}

    def own_instance_type(self) -> str | None:
        t = self.type
        if t == "aws_eks_node_group":
            v = self.body.get("instance_types")
            return v[0] if isinstance(v, list) and v else None
        if t in ("aws_launch_template", "aws_ec2_capacity_reservation"):
            return self.body.get("instance_type")
        if t == "aws_autoscaling_group":
            return _first(self.body, "mixed_instances_policy", "launch_template", "override", "instance_type")
        if t == "google_container_node_pool":
            return _first(self.body, "node_config", "machine_type")
        if t in ("google_compute_instance", "google_compute_instance_template"):
            return self.body.get("machine_type")
        if t == "google_compute_reservation":
            return _first(self.body, "specific_reservation", "instance_properties", "machine_type")
        if t == "azurerm_kubernetes_cluster_node_pool":
            return self.body.get("vm_size")
        if t in ("azurerm_linux_virtual_machine_scale_set", "azurerm_windows_virtual_machine_scale_set"):
            return self.body.get("sku")
        if t == "azurerm_orchestrated_virtual_machine_scale_set":
            return self.body.get("sku_name")
        if t == "azurerm_capacity_reservation":
            return _first(self.body, "sku", "name")
        return None

    def spot(self) -> bool:
        t, b = self.type, self.body
        if t == "aws_eks_node_group":
            return str(b.get("capacity_type", "")).upper() == "SPOT"
        if t == "aws_launch_template":
            return str(_first(b, "instance_market_options", "market_type") or "").lower() == "spot"
        if t == "google_container_node_pool":
            return _first(b, "node_config", "spot") is True or _first(b, "node_config", "preemptible") is True
        if t in ("google_compute_instance", "google_compute_instance_template"):
            return (str(_first(b, "scheduling", "provisioning_model") or "").upper() == "SPOT"
                    or _first(b, "scheduling", "preemptible") is True)
        if t.startswith("azurerm_"):
            return str(b.get("priority", "")).lower() == "spot"
        if t == "aws_autoscaling_group":
            pct = _first(b, "mixed_instances_policy", "instances_distribution",
                         "on_demand_percentage_above_base_capacity")
            return _as_int(pct) == 0
        return False

    def size(self) -> tuple[Any, Any]:
        """(min, max) nodes of a node group or a fixed instance set (raw values)."""
        t, b = self.type, self.body
        if t == "aws_eks_node_group":
            sc = _first(b, "scaling_config") or {}
            return sc.get("min_size"), sc.get("max_size")
        if t == "google_container_node_pool":
            auto = _first(b, "autoscaling")
            if isinstance(auto, dict):
                lo = auto.get("min_node_count", auto.get("total_min_node_count"))
                hi = auto.get("max_node_count", auto.get("total_max_node_count"))
                return lo, hi
            n = b.get("node_count", b.get("initial_node_count"))
            return n, n
        if t == "azurerm_kubernetes_cluster_node_pool":
            auto = b.get("auto_scaling_enabled", b.get("enable_auto_scaling"))
            if auto is True:
                return b.get("min_count"), b.get("max_count")
            n = b.get("node_count")
            return n, n
        if t == "aws_autoscaling_group":
            return b.get("min_size"), b.get("max_size")
        if t == "google_compute_instance":
            n = b.get("count", 1)
            return n, n
        if t.startswith("azurerm_") and "scale_set" in t:
            n = b.get("instances")
            return n, n
        return None, None

    def reservation_count(self) -> Any:
        if self.type == "aws_ec2_capacity_reservation":
            return self.body.get("instance_count")
        if self.type == "google_compute_reservation":
            return _first(self.body, "specific_reservation", "count")
        if self.type == "azurerm_capacity_reservation":
            return _first(self.body, "sku", "capacity")
        return None


# --- the checks ----------------------------------------------------------------------------

def check_slurm(ctx: Context) -> list[str]:
    """slurm/<site>/: node names, Gres, Feature, State and partitions per block; the power
    programs where nodes are State=CLOUD; every Slurm training placement's sbatch, and each
    sbatch's partition holding enough nodes of its GRES type, GPUs and features."""
    out: list[str] = []
    for site in ctx.sites:
        conf = ctx.slurm_conf(site)
        needed = ctx.uses(site, "slurm")
        folder = ctx.out / "slurm" / site
        if conf is None:
            if needed:
                out.append(f"slurm: {site}: Slurm training holds nodes here but slurm/{site}/slurm.conf is missing")
            continue
        if not needed:
            out.append(f"slurm: {site}: slurm/{site}/slurm.conf exists but no Slurm training placement holds nodes "
                       f"at {site}")
        blocks = {(b.domain, b.tag): b for b in ctx.site_blocks(site)}
        nodes = ctx.slurm_nodes(site)
        seen: dict[tuple[str, str], set[int]] = {}
        for name, line in sorted(nodes.items()):
            m = re.fullmatch(r"(?P<domain>.+)-(?P<tag>own|buy|r3y|r1y|od|spot)(?P<num>\d+)", name)
            b = blocks.get((m["domain"], m["tag"])) if m else None
            if b is None:
                out.append(f"slurm: {site}: node {name} is not named <domain>-<tag>NN after a pool of the plan here")
                continue
            idx = int(m["num"])
            if len(m["num"]) != b.width:
                out.append(f"slurm: {site}: node {name} has {len(m['num'])} digits, block {b.label} of {b.nodes} "
                           f"nodes numbers with {b.width}")
            seen.setdefault((b.domain, b.pricing), set()).add(idx)
            features = set(filter(None, line.get("feature", line.get("features", "")).split(",")))
            if b.pricing not in features or features & (set(PRICINGS) - {b.pricing}):
                out.append(f"slurm: {site}: node {name} has Feature={','.join(sorted(features)) or '(none)'}, "
                           f"its block's pricing is {b.pricing}")
            gres = _gpu_gres(line.get("gres", ""))
            want = (slug(b.gpu), b.gpus_per_node)
            if gres != want:
                out.append(f"slurm: {site}: node {name} has Gres={line.get('gres', '(none)')}, the plan's pool has "
                           f"{b.gpus_per_node} x {b.gpu} (gpu:{want[0]}:{want[1]})")
            state = line.get("state", "")
            want_state = "CLOUD" if b.elastic else "UNKNOWN"
            if state.upper() != want_state:
                out.append(f"slurm: {site}: node {name} has State={state or '(none)'}; block {b.label} is "
                           f"{'elastic' if b.elastic else 'static'}: State={want_state}")
        for b in ctx.site_blocks(site):
            have = seen.get((b.domain, b.pricing), set())
            first, last = b.slurm_range
            want = set(range(first, last + 1))
            if have != want:
                missing, extra = sorted(want - have), sorted(have - want)
                why = "all N: Slurm alone on a static block" if last > b.s_peak else "max s"
                out.append(f"slurm: {site}: block {b.label}: Slurm's nodes must be {first}..{last} ({why}); "
                           f"slurm.conf is missing {_idx(missing)} and has extra {_idx(extra)}")
        # partitions
        by_name: dict[str, dict[str, str]] = {}
        for part in conf.partitions:
            pname = part["partitionname"]
            if pname in by_name:
                out.append(f"slurm: {site}: partition {pname} is defined twice")
            by_name[pname] = part
        domains = {b.domain for b in ctx.site_blocks(site) if b.s_peak > 0}
        for pname, part in sorted(by_name.items()):
            members = _partition_nodes(part, nodes)
            if members is None:
                out.append(f"slurm: {site}: partition {pname}: Nodes={part.get('nodes')} does not parse")
                continue
            if pname not in domains:
                out.append(f"slurm: {site}: partition {pname} is not a scheduling domain where Slurm holds nodes "
                           f"(domains: {', '.join(sorted(domains)) or 'none'})")
                continue
            want = {n for n in nodes if n.startswith(pname + "-") and
                    re.fullmatch(re.escape(pname) + r"-(own|buy|r3y|r1y|od|spot)\d+", n)}
            undefined = sorted(set(members) - set(nodes))
            if undefined:
                out.append(f"slurm: {site}: partition {pname} lists nodes slurm.conf does not define: "
                           f"{', '.join(undefined[:5])}")
            if set(members) != want:
                out.append(f"slurm: {site}: partition {pname} has {len(set(members) & want)} of the domain's "
                           f"{len(want)} Slurm nodes and {len(set(members) - want)} others")
        for d in sorted(domains - set(by_name)):
            out.append(f"slurm: {site}: no partition {d} for domain {d}, where Slurm holds nodes")
        # power saving
        cloud_nodes = sorted(n for n, line in nodes.items() if line.get("state", "").upper() == "CLOUD")
        if cloud_nodes:
            opts = conf.options
            for key, want, script in (("resumeprogram", RESUME_PROGRAM, "resume.sh"),
                                      ("suspendprogram", SUSPEND_PROGRAM, "suspend.sh")):
                if opts.get(key) != want:
                    out.append(f"slurm: {site}: {len(cloud_nodes)} State=CLOUD nodes but {key} is "
                               f"{opts.get(key) or 'unset'}, the contract says {want}")
                if not (folder / script).is_file():
                    out.append(f"slurm: {site}: State=CLOUD nodes but slurm/{site}/{script} is missing")
            static_nodes = {n for n, line in nodes.items() if line.get("state", "").upper() != "CLOUD"}
            try:
                exc = set(expand_hostlist(opts.get("suspendexcnodes", "")))
            except ValueError:
                exc = set()
            if static_nodes and exc != static_nodes:
                out.append(f"slurm: {site}: SuspendExcNodes lists {len(exc & static_nodes)} of the "
                           f"{len(static_nodes)} static nodes and {len(exc - static_nodes)} others")
        for name in ("gres.conf", "topology.conf", "cgroup.conf"):
            if not (folder / name).is_file():
                out.append(f"slurm: {site}: slurm/{site}/{name} is missing")
        out += _check_sbatch(ctx, site, nodes, by_name)
    for folder in sorted((ctx.out / "slurm").glob("*")) if (ctx.out / "slurm").is_dir() else ():
        if folder.name not in ctx.sites:
            out.append(f"slurm: slurm/{folder.name}/ is for a site the plan does not have")
    return out


def _idx(items: list[int]) -> str:
    return "[" + ",".join(map(str, items[:8])) + (",..." if len(items) > 8 else "") + "]" if items else "none"


def _gpu_gres(text: str) -> tuple[str | None, int | None] | None:
    for part in text.split(","):
        bits = part.strip().split(":")
        if bits[0] != "gpu":
            continue
        if len(bits) == 3:
            return bits[1], _as_int(bits[2].split("(")[0])
        if len(bits) == 2:
            return None, _as_int(bits[1])
    return None


def _partition_nodes(part: dict[str, str], nodes: dict) -> list[str] | None:
    text = part.get("nodes", "")
    if text.upper() == "ALL":
        return list(nodes)
    try:
        return expand_hostlist(text)
    except ValueError:
        return None


def _check_sbatch(ctx: Context, site: str, nodes: dict, partitions: dict) -> list[str]:
    out: list[str] = []
    jobs = ctx.out / "slurm" / site / "jobs"
    placements = {w.name: (w, p) for w, p in ctx.placements(site, "slurm", "training")}
    for name, (w, p) in sorted(placements.items()):
        if not (jobs / f"{name}.sbatch").is_file():
            out.append(f"slurm: {site}: Slurm training placement {name} ({p.nodes} x {p.instance}) has no "
                       f"jobs/{name}.sbatch")
    for path in sorted(jobs.glob("*.sbatch")) if jobs.is_dir() else ():
        rel = f"slurm/{site}/jobs/{path.name}"
        opts = parse_sbatch(path.read_text(encoding="utf-8"))
        wp = placements.get(path.stem)
        part_name = opts.get("partition", "")
        n_nodes = _as_int(opts.get("nodes", "1").split("-")[-1])
        gpn = opts.get("gpus-per-node", "")
        g_type, _, g_count = gpn.rpartition(":")
        g_n = _as_int(g_count)
        alternatives = constraint_alternatives(opts.get("constraint", ""))
        if wp is None:
            out.append(f"slurm: {site}: {rel} is for {path.stem}, which is no Slurm training placement at {site}")
        else:
            w, p = wp
            domain = slug(p.instance)
            held = {q for q, series in holdings_of(p, ctx.months).items() if any(series)}
            if part_name != domain:
                out.append(f"slurm: {site}: {rel}: --partition={part_name}, the placement's domain is {domain}")
            if n_nodes != p.nodes:
                out.append(f"slurm: {site}: {rel}: --nodes={opts.get('nodes')}, the placement holds {p.nodes} nodes")
            if g_type != slug(w.gpu):
                out.append(f"slurm: {site}: {rel}: --gpus-per-node={gpn or '(none)'} names GPU type "
                           f"{g_type or '(none)'}, the placement's GPU is {w.gpu} (type {slug(w.gpu)})")
            named = [f for a in alternatives for f in a]
            if any(len(a) != 1 for a in alternatives) or sorted(named) != sorted(held):
                out.append(f"slurm: {site}: {rel}: --constraint={opts.get('constraint', '(none)')}, the placement "
                           f"holds nodes of {'|'.join(q for q in PRICINGS if q in held)}")
        if part_name not in partitions:
            out.append(f"slurm: {site}: {rel}: --partition={part_name or '(none)'} does not exist in slurm.conf "
                       f"(partitions: {', '.join(sorted(partitions)) or 'none'})")
            continue
        members = _partition_nodes(partitions[part_name], nodes) or []
        fit = 0
        for n in members:
            line = nodes.get(n)
            if line is None:
                continue
            gres = _gpu_gres(line.get("gres", ""))
            if not gres or gres[0] != g_type or (gres[1] or 0) < (g_n or 0):
                continue
            feats = set(filter(None, line.get("feature", line.get("features", "")).split(",")))
            if alternatives and not any(a <= feats for a in alternatives):
                continue
            fit += 1
        if n_nodes is None or fit < n_nodes:
            out.append(f"slurm: {site}: {rel} asks --nodes={opts.get('nodes')} of partition {part_name} with "
                       f"gpu:{g_type or '?'} x{g_n} and --constraint={opts.get('constraint', '')}, but the partition "
                       f"has only {fit} such nodes")
    return out


def check_capacity(ctx: Context) -> list[str]:
    """Per block and month: s[m] + k[m] <= pool.monthly_nodes[m]; slurm.conf has at least max s
    nodes of the block; the Kubernetes side (Terraform node group max in the cloud, Node objects
    in 05-nodes.yaml on-prem) at least max k."""
    out: list[str] = []
    for site, sp in ctx.sites.items():
        nodes = ctx.slurm_nodes(site) if ctx.slurm_conf(site) else {}
        for b in ctx.site_blocks(site):
            for m in range(ctx.months):
                if b.s[m] + b.k[m] > b.pool_monthly[m]:
                    out.append(f"capacity: {b.label} month {m}: Slurm {b.s[m]} + Kubernetes {b.k[m]} nodes exceed "
                               f"the pool's {b.pool_monthly[m]}")
            if b.static and b.s_peak > b.nodes:
                out.append(f"capacity: {b.label}: Slurm holds {b.s_peak} nodes at its peak, the pool has {b.nodes}")
            if b.s_peak:
                have = sum(1 for n in nodes if re.fullmatch(re.escape(f"{b.domain}-{b.tag}") + r"\d+", n))
                if have < b.s_peak:
                    out.append(f"capacity: {b.label}: slurm.conf has {have} nodes of the block, Slurm holds "
                               f"{b.s_peak} at its peak")
            if b.k_peak:
                if sp.type == "cloud":
                    groups = [r for r in ctx.terraform(site) if r.type in NODE_GROUPS and
                              r.labels().get(POOL_LABEL) == b.domain and r.labels().get(PRICING_LABEL) == b.pricing]
                    # the most nodes the groups reach in a month, with that month's variables
                    top = max((sum((tf_number(r.body.get("count", 1), v) or 0) * (tf_number(r.size()[1], v) or 0)
                                   for r in groups) for v in ctx.tf_months(site)), default=0)
                    if top < b.k_peak:
                        out.append(f"capacity: {b.label}: Terraform node groups labelled {b.domain}/{b.pricing} "
                                   f"reach {top} nodes, Kubernetes holds {b.k_peak} at its peak")
                else:
                    have = sum(1 for _f, d in ctx.k8s_kind(site, "Node")
                               if _labels(d).get(POOL_LABEL) == b.domain and _labels(d).get(PRICING_LABEL) == b.pricing)
                    if have < b.k_peak:
                        out.append(f"capacity: {b.label}: 05-nodes.yaml has {have} Node objects of the block, "
                                   f"Kubernetes holds {b.k_peak} at its peak")
    return out


def check_schedule(ctx: Context) -> list[str]:
    """schedule/<site>.csv: every block's node counts per orchestrator and month are s[m] and
    k[m]; for static blocks the hostlists are exactly Slurm 1..s[m] and Kubernetes
    N-k[m]+1..N, disjoint, inside 1..N. On-prem Node objects and Slurm nodes of a block overlap
    only on nodes the schedule hands over (those carry the `infra-compile.io/months` annotation
    naming the months Kubernetes holds them)."""
    out: list[str] = []
    for site, sp in ctx.sites.items():
        blocks = ctx.site_blocks(site)
        if not any(b.s_peak or b.k_peak for b in blocks):
            continue
        if ctx.schedule(site) is None:
            out.append(f"schedule: {site}: schedule/{site}.csv is missing")
            continue
        smap = ctx.schedule_map(site)
        known = {(b.domain, b.pricing) for b in blocks}
        for key in smap:
            if key[0] == "nodes" and (key[2], key[3]) not in known:
                out.append(f"schedule: {site}: rows for {key[2]}/{key[3]}, a block the plan does not have here")
        given: dict[tuple[str, str], dict[str, set[int]]] = {}   # (block, orchestrator) -> node -> months
        for b in blocks:
            for orch, series in (("slurm", b.s), ("kubernetes", b.k)):
                rows = smap.get(("nodes", orch, b.domain, b.pricing), {})
                for m in range(ctx.months):
                    count, hosts = rows.get(m, (0, ""))
                    if count != series[m]:
                        out.append(f"schedule: {b.label} month {m}: the schedule gives {orch} {count} nodes, the plan "
                                   f"{series[m]}")
                    if not b.static:
                        continue
                    try:
                        names = expand_hostlist(hosts)
                    except ValueError as exc:
                        out.append(f"schedule: {b.label} month {m}: {orch} nodes {hosts!r}: {exc}")
                        continue
                    if len(names) != count:
                        out.append(f"schedule: {b.label} month {m}: {orch}'s nodes {hosts!r} are {len(names)}, its "
                                   f"count {count}")
                    want = (b.names(1, series[m]) if orch == "slurm"
                            else b.names(b.nodes - series[m] + 1, b.nodes))
                    inside = b.names(1, b.nodes)
                    if set(names) - inside:
                        out.append(f"schedule: {b.label} month {m}: {orch} gets {sorted(set(names) - inside)[:4]}, "
                                   f"outside the block's nodes 1..{b.nodes}")
                    if set(names) != want:
                        span = ((1, series[m]) if orch == "slurm" else (b.nodes - series[m] + 1, b.nodes))
                        want_text = f"nodes {span[0]}..{span[1]}" if series[m] else "no nodes"
                        out.append(f"schedule: {b.label} month {m}: {orch} gets {hosts or 'no nodes'}, the contract's "
                                   f"{want_text}")
                    for n in names:
                        given.setdefault((b.domain, b.pricing), {}).setdefault(f"{orch}:{n}", set()).add(m)
            if b.static:
                for m in range(ctx.months):
                    s_rows = smap.get(("nodes", "slurm", b.domain, b.pricing), {}).get(m, (0, ""))[1]
                    k_rows = smap.get(("nodes", "kubernetes", b.domain, b.pricing), {}).get(m, (0, ""))[1]
                    try:
                        both = set(expand_hostlist(s_rows)) & set(expand_hostlist(k_rows))
                    except ValueError:
                        continue
                    if both:
                        out.append(f"schedule: {b.label} month {m}: nodes {', '.join(sorted(both)[:4])} go to both "
                                   f"Slurm and Kubernetes")
        out += _check_report_schedule(ctx, site, [b for b in blocks if b.handover])
        # on-prem overlap of Node objects and Slurm nodes
        if sp.type != "cloud":
            slurm_nodes = set(ctx.slurm_nodes(site)) if ctx.slurm_conf(site) else set()
            for _f, d in ctx.k8s_kind(site, "Node"):
                name = (d.get("metadata") or {}).get("name", "")
                if name not in slurm_nodes:
                    continue
                key = (_labels(d).get(POOL_LABEL), _labels(d).get(PRICING_LABEL))
                marks = given.get(key, {})
                s_months, k_months = marks.get(f"slurm:{name}", set()), marks.get(f"kubernetes:{name}", set())
                if not (s_months and k_months):
                    out.append(f"schedule: {site}: node {name} is both a Slurm node and a Kubernetes Node object, but "
                               f"the schedule does not hand it over (Slurm's in months {sorted(s_months) or '-'}, "
                               f"Kubernetes' in {sorted(k_months) or '-'})")
                    continue
                ann = ((d.get("metadata") or {}).get("annotations") or {}).get(MONTHS_ANNOTATION)
                if ann is None:
                    out.append(f"schedule: {site}: Node {name} changes hands but has no {MONTHS_ANNOTATION} annotation")
                elif parse_ranges(ann) != k_months:
                    out.append(f"schedule: {site}: Node {name}'s {MONTHS_ANNOTATION}={ann!r}, the schedule gives it "
                               f"to Kubernetes in months {_idx(sorted(k_months))}")
    return out


def _check_report_schedule(ctx: Context, site: str, handovers: list[Block]) -> list[str]:
    """The report's "Node schedule" section shows the schedule rows (with nodes) of the blocks
    whose nodes change hands: a table row per span with the site, months, orchestrator, the
    pool (domain and pricing) and the hostlist."""
    if not handovers:
        return []
    text = ctx.text("report.md") or ""
    if not re.search(r"^#+\s*Node schedule", text, re.M):
        return [f"report: {site}: blocks {', '.join(b.label for b in handovers)} change hands but report.md has no "
                f"Node schedule section"]
    table = [[c.strip().strip("`") for c in line.strip().strip("|").split("|")]
             for line in text.splitlines() if line.lstrip().startswith("|")]
    out: list[str] = []
    for r in ctx.schedule(site) or []:
        if r.get("kind") != "nodes" or (r.get("domain"), r.get("pricing")) not in \
                {(b.domain, b.pricing) for b in handovers} or not (_as_int(r.get("count")) or 0):
            continue
        months = r["month_first"] if r["month_first"] == r["month_last"] else f"{r['month_first']}-{r['month_last']}"
        if not any(site in cells and r["orchestrator"] in cells and r["nodes"] in cells and months in cells
                   and any(r["domain"] in c and r["pricing"] in c for c in cells) for cells in table):
            out.append(f"report: {site}: the Node schedule has no row for {r['orchestrator']} holding {r['nodes']} "
                       f"of {r['domain']}/{r['pricing']} in months {months}")
    return out


def _labels(doc: dict) -> dict:
    return (doc.get("metadata") or {}).get("labels") or {}


def _pod_spec(doc: dict) -> dict:
    """The pod template's spec of a Deployment, or of a JobSet's replicated job."""
    return (((doc.get("spec") or {}).get("template") or {}).get("spec") or {})


def _pod_gpus(pod: dict) -> int:
    total = 0
    for c in pod.get("containers") or ():
        res = c.get("resources") or {}
        v = (res.get("limits") or {}).get(GPU_RESOURCE, (res.get("requests") or {}).get(GPU_RESOURCE, 0))
        total += _as_int(v) or 0
    return total


# A LeaderWorkerSet (kubernetes-sigs/lws v0.7.0) runs a service whose replica spans several nodes
# (wide expert parallelism): a replica is a group of `size` pods, one a node, its leader the API
# server. The checks below read it as a Deployment of its leader pods whose replica holds `size`
# pods' GPUs.
LWS_KIND = "LeaderWorkerSet"
LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
NAME_LABEL = "app.kubernetes.io/name"


def _as_server(doc: dict) -> dict:
    """A Deployment as it is; a LeaderWorkerSet as a Deployment of its leader pods (template: the
    leader's), with `_size` (pods a replica), `_worker` (the workers' pod template) and `_kind`."""
    if doc.get("kind") != LWS_KIND:
        return doc
    spec = doc.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    name = (doc.get("metadata") or {}).get("name", "")
    return {"kind": LWS_KIND, "metadata": doc.get("metadata") or {},
            "spec": {"replicas": spec.get("replicas", 1), "selector": {"matchLabels": {NAME_LABEL: name}},
                     "template": lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}},
            "_size": _as_int(lwt.get("size", 1)) or 0, "_worker": lwt.get("workerTemplate") or {},
            "_kind": LWS_KIND, "_leader": "leaderTemplate" in lwt}


def _server_docs(ctx: "Context", site: str) -> list[tuple[str, dict]]:
    """The site's server objects: Deployments, and LeaderWorkerSets read as _as_server does."""
    return ([(f, d) for f, d in ctx.k8s_kind(site, "Deployment")]
            + [(f, _as_server(d)) for f, d in ctx.k8s_kind(site, LWS_KIND)])


def _pods_a_replica(doc: dict) -> int:
    return doc.get("_size", 1) if doc.get("_kind") == LWS_KIND else 1


def _check_group(where: str, d: dict, pod: dict, gpus: int) -> list[str]:
    """A LeaderWorkerSet's group: a leader template, at least two pods, and its workers on the
    leader's pool with the leader's GPUs (one node each), none of them carrying the label the
    service's InferencePool selects by (a headless worker serves no requests)."""
    out: list[str] = []
    if not d.get("_leader"):
        out.append(f"{where}: no leaderTemplate: the workers' template would serve as leader")
    if d.get("_size", 0) < 2:
        out.append(f"{where}: a group of {d.get('_size')} pod(s): a LeaderWorkerSet replica spans several nodes")
    worker = (d.get("_worker") or {}).get("spec") or {}
    wsel = (worker.get("nodeSelector") or {}).get(POOL_LABEL)
    if wsel != (pod.get("nodeSelector") or {}).get(POOL_LABEL):
        out.append(f"{where}: its workers select pool {wsel}, its leader {(pod.get('nodeSelector') or {}).get(POOL_LABEL)}")
    if _pod_gpus(worker) != gpus:
        out.append(f"{where}: a worker pod asks {_pod_gpus(worker)} GPUs, the leader {gpus}")
    if "infra-compile.io/workload" in (((d.get("_worker") or {}).get("metadata") or {}).get("labels") or {}):
        out.append(f"{where}: its worker pods carry infra-compile.io/workload, which the InferencePool selects "
                   "by: requests would reach headless workers")
    return out


def _ffd(items: list[int], capacity: int) -> int:
    """Bins of `capacity` first-fit decreasing needs for `items`."""
    bins: list[int] = []
    for size in sorted(items, reverse=True):
        for i, free in enumerate(bins):
            if free >= size:
                bins[i] -= size
                break
        else:
            bins.append(capacity - size)
    return len(bins)


def _backing(ctx: Context, site: str) -> dict[str, list[tuple[str | None, int, int, str]]]:
    """Pool label value -> [(pricing label, most nodes, GPUs per node, source)] of the node groups
    (cloud, Terraform) or Node objects (on-prem) that carry it."""
    out: dict[str, list] = {}
    sp = ctx.sites[site]
    if sp.type == "cloud":
        for r in ctx.terraform(site):
            if r.type not in NODE_GROUPS:
                continue
            labels = r.labels()
            pool = labels.get(POOL_LABEL)
            if pool is None:
                continue
            inst = r.own_instance_type() or ctx.domain_instance.get((site, pool), "")
            gpus = ctx.gpus_of(inst) or 0
            # the most nodes it reaches in a month, with that month's variables
            most = max(((tf_number(r.body.get("count", 1), v) or 0) * (tf_number(r.size()[1], v) or 0)
                        for v in ctx.tf_months(site)), default=0)
            out.setdefault(pool, []).append((labels.get(PRICING_LABEL), most, gpus, r.address))
    else:
        for f, d in ctx.k8s_kind(site, "Node"):
            labels = _labels(d)
            pool = labels.get(POOL_LABEL)
            if pool is None:
                continue
            gpus = ctx.gpus_of(ctx.domain_instance.get((site, pool), "")) or 0
            out.setdefault(pool, []).append((labels.get(PRICING_LABEL), 1, gpus, f))
    return out


def check_kubernetes(ctx: Context) -> list[str]:
    """kubernetes/<site>/: Deployments and JobSets select a pool that node groups or Node objects
    carry, with room for them (Deployments month by month, packed first-fit decreasing); the
    Deployment/HPA/annotation/schedule replicas follow the plan; Kueue flavors are real blocks
    and the ClusterQueue's quotas hold the JobSets; on-prem Node objects are Kubernetes' range."""
    out: list[str] = []
    for site, sp in ctx.sites.items():
        docs = ctx.k8s_docs(site)
        services = [(w, p) for w, p in ctx.placements(site, "kubernetes", "inference") if p.replicas > 0]
        trainings = [(w, p) for w, p in ctx.placements(site, "kubernetes", "training")]
        if not docs:
            if ctx.uses(site, "kubernetes") or services:
                out.append(f"kubernetes: {site}: Kubernetes holds nodes here but kubernetes/{site}/ has no manifests")
            continue
        backing = _backing(ctx, site)
        smap = ctx.schedule_map(site) if ctx.schedule(site) is not None else {}
        out += _check_deployments(ctx, site, services, trainings, backing, smap)
        out += _check_jobsets(ctx, site, trainings, backing)
        if sp.type != "cloud":
            out += _check_node_objects(ctx, site)
    return out


def _match_workload(name: str, labels: dict, names: Iterable[str]) -> str | None:
    if labels.get("infra-compile.io/workload") in names:
        return labels["infra-compile.io/workload"]
    hits = [w for w in names if name == w or name.startswith(w + "-")]
    return max(hits, key=len) if hits else None


def _pod_labels(doc: dict) -> dict:
    return ((((doc.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}


def _role_layout(p: Any, role: str) -> tuple[int, int] | None:
    """(tensor parallel, servers a unit) of one role of a disaggregated placement; None where the
    placement is colocated or the role unknown."""
    g = getattr(p, "disaggregation", None)
    if g is None or role not in PD_ROLES:
        return None
    return (g.prefill_tp, g.prefill_instances) if role == "prefill" else (g.decode_tp, g.decode_instances)


def _check_deployments(ctx, site, services, trainings, backing, smap) -> list[str]:
    out: list[str] = []
    unmatched = list(services)
    roles_seen: dict[int, set[str]] = {}      # id(placement) -> roles whose Deployment was found
    hpas = {((d.get("spec") or {}).get("scaleTargetRef") or {}).get("name"): d
            for _f, d in ctx.k8s_kind(site, "HorizontalPodAutoscaler")}
    k8s_services = {(d.get("metadata") or {}).get("name") for _f, d in ctx.k8s_kind(site, "Service")}
    pdbs = [d for _f, d in ctx.k8s_kind(site, "PodDisruptionBudget")]
    per_domain: dict[str, list[tuple[str, int, list[int], int]]] = {}
    for f, d in _server_docs(ctx, site):
        meta = d.get("metadata") or {}
        name = meta.get("name", "")
        pod = _pod_spec(d)
        pool = (pod.get("nodeSelector") or {}).get(POOL_LABEL)
        gpus = _pod_gpus(pod)
        size = _pods_a_replica(d)         # pods a replica (a LeaderWorkerSet group's; else 1)
        replica_gpus = gpus * size
        where = f"kubernetes: {site}: {f}: {d.get('_kind', 'Deployment')} {name}"
        if d.get("_kind") == LWS_KIND:
            out += _check_group(where, d, pod, gpus)
        if pool is None:
            if gpus:
                out.append(f"{where} asks {gpus} GPUs per pod but selects no {POOL_LABEL}")
            continue
        replicas = (d.get("spec") or {}).get("replicas", 1)
        ann = (meta.get("annotations") or {}).get(REPLICAS_ANNOTATION)
        monthly = parse_int_list(ann) if ann is not None else None
        # backed by a pool label with room for the pods
        groups = backing.get(pool, [])
        if not groups:
            out.append(f"{where} selects {POOL_LABEL}={pool}, which no "
                       f"{'node group' if ctx.sites[site].type == 'cloud' else 'Node object'} carries")
        else:
            gpn = max(g[2] for g in groups)
            room = sum(g[1] * g[2] for g in groups)
            peak = max(monthly or [replicas or 0])
            if gpus > gpn:
                out.append(f"{where}: a pod asks {gpus} GPUs, the nodes of pool {pool} have {gpn}")
            if peak * replica_gpus > room:
                out.append(f"{where}: {peak} replicas x {replica_gpus} GPUs exceed pool {pool}'s {room} GPUs "
                           f"({sum(g[1] for g in groups)} nodes at most)")
        # which placement
        wname = _match_workload(name, {**_labels(d), **(((d.get("spec") or {}).get("template") or {})
                                                      .get("metadata") or {}).get("labels", {})},
                                {w.name for w, _p in services})
        role = _pod_labels(d).get(ROLE_LABEL)
        if role is not None:
            # one role of a disaggregated placement: its GPUs per pod are the role's tensor parallel,
            # its replicas the units times the role's servers a unit
            cands = [(w, p) for w, p in unmatched if w.name == wname and slug(p.instance) == pool
                     and (_role_layout(p, role) or (0, 0))[0] == gpus and role not in roles_seen.get(id(p), set())]
            per_unit = {id(p): (_role_layout(p, role) or (0, 1))[1] for _w, p in cands}
        else:
            cands = [(w, p) for w, p in unmatched if w.name == wname and slug(p.instance) == pool
                     and getattr(p, "disaggregation", None) is None
                     and (p.gpus_per_replica or max(1, p.gpus // max(1, p.replicas))) == replica_gpus]
            per_unit = {id(p): 1 for _w, p in cands}

        def series(p):
            base = _series(p.monthly_replicas, ctx.months) if p.monthly_replicas else [p.replicas] * ctx.months
            return [r * per_unit[id(p)] for r in base]
        if not cands:
            what = f"{ROLE_LABEL}={role}, " if role is not None else ""
            out.append(f"{where} ({what}pool {pool}, {gpus} GPUs per pod{f' x {size} pods' if size > 1 else ''}) "
                       f"matches no service placement of the plan at {site}")
            continue
        pick = next(((w, p) for w, p in cands if monthly and series(p) == monthly), cands[0])
        w, p = pick
        if role is None:
            unmatched.remove(pick)
        else:
            roles_seen.setdefault(id(p), set()).add(role)
            if roles_seen[id(p)] >= set(PD_ROLES):
                unmatched.remove(pick)
        plan_monthly = series(p)
        per_domain.setdefault(pool, []).append((name, gpus, monthly if monthly and len(monthly) == ctx.months
                                                else plan_monthly, size))
        if replicas != plan_monthly[0]:
            out.append(f"{where}: replicas {replicas}, the plan runs {plan_monthly[0]} in month 0")
        if monthly is None:
            out.append(f"{where}: annotation {REPLICAS_ANNOTATION} is missing or not a list of integers ({ann!r})")
        elif monthly != plan_monthly:
            out.append(f"{where}: {REPLICAS_ANNOTATION}={ann}, the plan's replicas per month are "
                       f"{','.join(map(str, plan_monthly))}")
        first = next((m for m, r in enumerate(plan_monthly) if r > 0), None)
        hpa = hpas.get(name)
        if hpa is None:
            out.append(f"{where} has no HorizontalPodAutoscaler")
        elif first is not None:
            spec = hpa.get("spec") or {}
            ref = spec.get("scaleTargetRef") or {}
            kind = d.get("_kind", "Deployment")
            api = LWS_API if kind == LWS_KIND else "apps/v1"
            if (ref.get("kind"), ref.get("apiVersion")) != (kind, api):
                out.append(f"{where}: its HPA scales a {ref.get('kind')} ({ref.get('apiVersion')}), the servers are a "
                           f"{kind} ({api})")
            hi, lo = spec.get("maxReplicas"), spec.get("minReplicas", 1)
            want_hi = plan_monthly[first]
            if not isinstance(hi, int) or hi < 1 or hi != want_hi:
                out.append(f"{where}: HPA maxReplicas {hi}, the plan's replicas in its first month ({first}) are "
                           f"{want_hi}")
            if lo != min(2, want_hi):
                out.append(f"{where}: HPA minReplicas {lo}, the contract's min(2, {want_hi}) = {min(2, want_hi)}")
        if name not in k8s_services:
            out.append(f"{where} has no Service")
        sel = ((((d.get("spec") or {}).get("selector") or {}).get("matchLabels")) or {})
        if not any(((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") == sel for pdb in pdbs):
            out.append(f"{where} has no PodDisruptionBudget selecting its pods")
        if ctx.schedule(site) is not None:
            rows = smap.get(("replicas", "kubernetes", pool, name), {})
            sched = [rows.get(m, (0, ""))[0] for m in range(ctx.months)]
            if sched != plan_monthly:
                out.append(f"{where}: the schedule's replicas rows say {','.join(map(str, sched))} per month, the "
                           f"plan's are {','.join(map(str, plan_monthly))}")
    for w, p in unmatched:
        if getattr(p, "disaggregation", None) is not None:
            missing = [r for r in PD_ROLES if r not in roles_seen.get(id(p), set())]
            out.append(f"kubernetes: {site}: service {w.name} ({p.replicas} disaggregated units on {p.instance}) has "
                       f"no Deployment of its {' and '.join(missing)} servers (pods labelled {ROLE_LABEL})")
            continue
        out.append(f"kubernetes: {site}: service {w.name} ({p.replicas} replicas on {p.instance}) has no Deployment")
    # month by month: the domain's services fit into the nodes Kubernetes holds there for them
    for pool, deps in sorted(per_domain.items()):
        blocks = [b for b in ctx.site_blocks(site) if b.domain == pool]
        if not blocks:
            continue
        gpn = blocks[0].gpus_per_node
        for m in range(ctx.months):
            items = [g for _n, g, monthly, size in deps for _ in range(monthly[m] * size)]
            if not items:
                continue
            nodes = sum(b.k[m] for b in blocks)
            need = _ffd(items, gpn)
            if need > nodes:
                names = ", ".join(f"{n} {monthly[m] * size}x{g}" for n, g, monthly, size in deps if monthly[m])
                out.append(f"kubernetes: {site}: month {m}: the services of domain {pool} ({names} GPUs) need {need} "
                           f"nodes of {gpn} GPUs packed first-fit decreasing, Kubernetes holds {nodes} nodes there "
                           f"(k[{m}] = {' + '.join(f'{b.k[m]} {b.pricing}' for b in blocks)})")
    return out


def _check_jobsets(ctx, site, trainings, backing) -> list[str]:
    out: list[str] = []
    flavors: dict[str, tuple[str | None, str | None]] = {}
    for f, d in ctx.k8s_kind(site, "ResourceFlavor"):
        name = (d.get("metadata") or {}).get("name", "")
        labels = (d.get("spec") or {}).get("nodeLabels") or {}
        pool, pricing = labels.get(POOL_LABEL), labels.get(PRICING_LABEL)
        flavors[name] = (pool, pricing)
        b = ctx.blocks.get((site, pool, pricing))
        if b is None:
            out.append(f"kubernetes: {site}: {f}: ResourceFlavor {name} selects pool {pool} pricing {pricing}, which "
                       f"is no block of the plan at {site}")
        elif name != b.flavor:
            out.append(f"kubernetes: {site}: {f}: ResourceFlavor {name} should be named {b.flavor}")
    # The ClusterQueue the LocalQueue `training` feeds.
    local = [d for _f, d in ctx.k8s_kind(site, "LocalQueue") if (d.get("metadata") or {}).get("name") == "training"]
    queue_name = ((local[0].get("spec") or {}).get("clusterQueue")) if local else None
    quota: dict[str, int] = {}
    for _f, d in ctx.k8s_kind(site, "ClusterQueue"):
        if queue_name is not None and (d.get("metadata") or {}).get("name") != queue_name:
            continue
        for group in (d.get("spec") or {}).get("resourceGroups") or ():
            for fl in group.get("flavors") or ():
                for res in fl.get("resources") or ():
                    if res.get("name") == GPU_RESOURCE:
                        quota[fl.get("name")] = quota.get(fl.get("name"), 0) + (_as_int(res.get("nominalQuota")) or 0)
    used = {b.flavor: b for b in ctx.site_blocks(site) if any(b.k_train)}

    def _part_gpus(ctx, site, b) -> set[int]:
        """GPUs of each JobSet replicated job of this block's pricing in the domain."""
        out = set()
        for _path, js in ctx.k8s_kind(site, "JobSet"):
            for rj in (js.get("spec") or {}).get("replicatedJobs") or ():
                pod = ((rj.get("template") or {}).get("spec") or {}).get("template") or {}
                sel = (pod.get("spec") or {}).get("nodeSelector") or {}
                if sel.get(POOL_LABEL) == b.domain and sel.get(PRICING_LABEL) == b.pricing:
                    pods = _as_int(((rj.get("template") or {}).get("spec") or {}).get("parallelism")) or 0
                    out.add(pods * b.gpus_per_node)
        return out
    for fname, b in sorted(used.items()):
        # jobs that take turns on a node within a month count once: at most the block's N
        want = min(max(b.k_train), max(b.nodes, 1)) * b.gpus_per_node
        hit = [n for n, lab in flavors.items() if lab == (b.domain, b.pricing)]
        if not hit:
            out.append(f"kubernetes: {site}: no ResourceFlavor for block {b.label}, which Kubernetes training uses")
            continue
        got = sum(quota.get(n, 0) for n in hit)
        if got != want and not (got > want and got in _part_gpus(ctx, site, b)):
            out.append(f"kubernetes: {site}: ClusterQueue {queue_name}: GPU quota of flavor {hit[0]} is {got}, Kubernetes "
                       f"training holds at most {max(b.k_train)} nodes x {b.gpus_per_node} = {want} GPUs of {b.label}")
    for n, lab in sorted(flavors.items()):
        b = ctx.blocks.get((site, lab[0], lab[1]))
        if b is not None and b.flavor not in used:
            out.append(f"kubernetes: {site}: ResourceFlavor {n} is for block {b.label}, which no Kubernetes training "
                       f"holds")
    jobsets = ctx.k8s_kind(site, "JobSet")
    if jobsets and not local:
        out.append(f"kubernetes: {site}: JobSets but no LocalQueue named training")
    unmatched = list(trainings)
    for f, d in jobsets:
        meta = d.get("metadata") or {}
        name = meta.get("name", "")
        where = f"kubernetes: {site}: {f}: JobSet {name}"
        if _labels(d).get("kueue.x-k8s.io/queue-name") != "training":
            out.append(f"{where} is not queued in LocalQueue training (label kueue.x-k8s.io/queue-name)")
        wname = _match_workload(name, _labels(d), {w.name for w, _p in trainings})
        wp = next(((w, p) for w, p in unmatched if w.name == wname), None)
        if wp is None:
            out.append(f"{where} matches no Kubernetes training placement of the plan at {site}")
        else:
            unmatched.remove(wp)
        held = holdings_of(wp[1], ctx.months) if wp else {}
        first = next((m for m in range(ctx.months) if any(s[m] for s in held.values())), 0)
        want_parts = {q: s[first] for q, s in held.items() if s[first] > 0}
        got_parts: dict[str, int] = {}
        for rj in (d.get("spec") or {}).get("replicatedJobs") or ():
            rname = rj.get("name", "")
            job = (rj.get("template") or {}).get("spec") or {}
            pods = (_as_int(rj.get("replicas", 1)) or 0) * (_as_int(job.get("parallelism", 1)) or 0)
            pod = _pod_spec(rj.get("template") or {})
            sel = pod.get("nodeSelector") or {}
            pool, pricing = sel.get(POOL_LABEL), sel.get(PRICING_LABEL)
            m = re.fullmatch(r"w-(.+)", rname)
            named = next((q for q in PRICINGS if m and TAGS[q] == m[1]), None)
            if named is None:
                out.append(f"{where}: replicated job {rname} is not named w-<pricing tag>")
            if pricing is not None and named is not None and pricing != named:
                out.append(f"{where}: replicated job {rname} selects pricing {pricing}")
            pricing = pricing or named
            got_parts[pricing or rname] = got_parts.get(pricing or rname, 0) + pods
            gpus = _pod_gpus(pod)
            if wp and pool != slug(wp[1].instance):
                out.append(f"{where}: replicated job {rname} selects pool {pool}, the placement's domain is "
                           f"{slug(wp[1].instance)}")
            groups = [g for g in backing.get(pool, []) if g[0] in (pricing, None)]
            if not groups:
                out.append(f"{where}: replicated job {rname} selects {POOL_LABEL}={pool} ({pricing}), which no "
                           f"{'node group' if ctx.sites[site].type == 'cloud' else 'Node object'} carries")
            elif pods > sum(g[1] for g in groups) or gpus > max(g[2] for g in groups):
                out.append(f"{where}: replicated job {rname} needs {pods} pods x {gpus} GPUs, pool {pool} ({pricing}) "
                           f"has {sum(g[1] for g in groups)} nodes of {max(g[2] for g in groups)} GPUs")
            flavor = [n for n, lab in flavors.items() if lab == (pool, pricing)]
            room = sum(quota.get(n, 0) for n in flavor)
            if pods * gpus > room:
                out.append(f"{where}: replicated job {rname}: {pods} pods x {gpus} GPUs = {pods * gpus} exceed the "
                           f"ClusterQueue's GPU quota {room} of flavor {flavor[0] if flavor else '(none)'} "
                           f"({pool}, {pricing})")
        if wp and sum(want_parts.values()) == wp[1].nodes:
            if got_parts != want_parts:
                out.append(f"{where}: pods per pricing {got_parts}, the placement holds {want_parts} in its first "
                           f"month ({first})")
        elif wp:
            # The first month's holdings add up to more than the job (it moves between pricings
            # within the month): the pods are the job's nodes, of pricings it holds that month.
            if sum(got_parts.values()) != wp[1].nodes or not set(got_parts) <= set(want_parts):
                out.append(f"{where}: pods per pricing {got_parts}, the job has {wp[1].nodes} nodes of pricings "
                           f"{'|'.join(sorted(want_parts))} in its first month ({first})")
    for w, p in unmatched:
        out.append(f"kubernetes: {site}: Kubernetes training placement {w.name} ({p.nodes} x {p.instance}) has no JobSet")
    return out


def _check_node_objects(ctx, site) -> list[str]:
    out: list[str] = []
    seen: dict[tuple[str, str], set[int]] = {}
    blocks = {(b.domain, b.tag): b for b in ctx.site_blocks(site)}
    for f, d in ctx.k8s_kind(site, "Node"):
        meta = d.get("metadata") or {}
        name = meta.get("name", "")
        labels = _labels(d)
        m = re.fullmatch(r"(?P<domain>.+)-(?P<tag>own|buy|r3y|r1y|od|spot)(?P<num>\d+)", name)
        b = blocks.get((m["domain"], m["tag"])) if m else None
        where = f"kubernetes: {site}: {f}: Node {name}"
        if b is None:
            out.append(f"{where} is not named <domain>-<tag>NN after a pool of the plan here")
            continue
        seen.setdefault((b.domain, b.pricing), set()).add(int(m["num"]))
        if labels.get(POOL_LABEL) != b.domain or labels.get(PRICING_LABEL) != b.pricing:
            out.append(f"{where} is labelled pool {labels.get(POOL_LABEL)} pricing {labels.get(PRICING_LABEL)}, its "
                       f"block is {b.domain}/{b.pricing}")
        taints = {(t.get("key"), t.get("value"), t.get("effect")) for t in (d.get("spec") or {}).get("taints") or ()}
        if GPU_TAINT not in taints:
            out.append(f"{where} lacks the taint nvidia.com/gpu=present:NoSchedule")
    for b in ctx.site_blocks(site):
        have = seen.get((b.domain, b.pricing), set())
        first, last = b.k8s_range
        want = set(range(first, last + 1))
        if have != want:
            why = "all N: Kubernetes alone on the block" if b.k_peak and not b.s_peak else f"max k = {b.k_peak}"
            out.append(f"kubernetes: {site}: block {b.label}: Node objects must be nodes {first}..{last} ({why}); "
                       f"missing {_idx(sorted(want - have))}, extra {_idx(sorted(have - want))}")
    return out


def _flavor_of(ctx: Context, site: str, r: TfResource, candidates: list[Block]) -> Block | None:
    """The block a non-node-group resource provisions: from its pool/pricing tags, else from the
    flavor or tag its names carry (the longest that occurs), else from its instance type when
    that leaves one block."""
    provider = ctx.sites[site].provider
    for tags in _dicts(r.body):
        keyed = {slug(k): v for k, v in tags.items()}
        pool = next((keyed[k] for k in ("infra-compile-io-pool", "infra-compile-pool") if k in keyed), None)
        pricing = next((keyed[k] for k in ("infra-compile-io-pricing", "infra-compile-pricing") if k in keyed), None)
        if isinstance(pool, str) and isinstance(pricing, str):
            return ctx.blocks.get((site, pool, pricing)) or Block(
                site=site, cloud=True, provider=provider, instance="?", domain=pool, pricing=pricing, nodes=0,
                gpu="", gpus_per_node=0, fabric="", pool_monthly=[], s=[], k=[])
    texts = [r.label.replace("_", "-").lower()] + [s.lower() for s in _strings(
        {k: v for k, v in r.body.items() if k in ("name", "name_prefix", "tags", "tag", "labels", "tag_specifications",
                                                  "description")})]
    best, best_len = None, 0
    domains = {slug(n) for n, mach in ctx.hw.machines.items() if mach.provider == provider}
    domains |= {b.domain for b in candidates}
    for domain in domains:
        for pricing in PRICINGS:
            for token in (f"{domain}-{slug(pricing)}", f"{domain}-{TAGS[pricing]}"):
                if len(token) <= best_len:
                    continue
                pat = r"(?<![a-z0-9])" + re.escape(token) + r"(?![a-z0-9])"
                if any(re.search(pat, t) for t in texts):
                    best, best_len = (domain, pricing), len(token)
    if best is not None:
        return ctx.blocks.get((site, best[0], best[1])) or Block(
            site=site, cloud=True, provider=provider, instance="?", domain=best[0], pricing=best[1], nodes=0, gpu="",
            gpus_per_node=0, fabric="", pool_monthly=[], s=[], k=[])
    inst = r.own_instance_type()
    same = [b for b in candidates if b.instance == inst]
    return same[0] if len(same) == 1 else None


def check_terraform(ctx: Context) -> list[str]:
    """terraform/<site>/ (cloud sites): the (domain, pricing) blocks with node groups, instances
    or templates are the plan's blocks with holdings; node groups labelled, tainted, spot iff
    spot, min/max per the contract; Slurm's static share as fixed instances of max s, its
    elastic share as templates (AWS, GCP); every reserved block a reservation of N nodes; no
    other resource runs GPU instances."""
    out: list[str] = []
    for folder in sorted((ctx.out / "terraform").glob("*")) if (ctx.out / "terraform").is_dir() else ():
        sp = ctx.sites.get(folder.name)
        if sp is None or sp.type != "cloud":
            out.append(f"terraform: terraform/{folder.name}/ is for {'an on-prem site' if sp else 'no site of the plan'}")
    for site, sp in ctx.sites.items():
        if sp.type != "cloud":
            continue
        blocks = ctx.site_blocks(site)
        held = [b for b in blocks if b.s_peak or b.k_peak]
        resources = ctx.terraform(site)
        if not resources:
            if held or any(b.pricing in RESERVED and b.nodes for b in blocks):
                out.append(f"terraform: {site}: the plan holds nodes here but terraform/{site}/ has no resources")
            continue
        provider = sp.provider
        gpu_types = {n for n, m in ctx.hw.machines.items() if m.provider != "on_prem"}
        groups = [r for r in resources if r.type in NODE_GROUPS]
        parents = [r for r in resources if r.type in NODE_GROUPS | {"aws_autoscaling_group"}]
        templates = [r for r in resources if r.type in TEMPLATES and not any(p.refers_to(r) for p in parents)]
        instances = [r for r in resources if r.type in INSTANCES]
        reservations = [r for r in resources if r.type in RESERVATIONS]
        provided: dict[tuple[str, str], list[str]] = {}
        # node groups
        ng_by_block: dict[tuple[str, str], list[TfResource]] = {}
        for r in groups:
            labels = r.labels()
            pool, pricing = labels.get(POOL_LABEL), labels.get(PRICING_LABEL)
            where = f"terraform: {site}: {r.address}"
            if pool is None or pricing is None:
                out.append(f"{where}: node group lacks the labels {POOL_LABEL} / {PRICING_LABEL} "
                           f"(has {dict(labels)})")
                if pool is None:
                    continue
                guess = _flavor_of(ctx, site, r, blocks)
                pricing = guess.pricing if guess is not None and guess.domain == pool else None
                if pricing is None:
                    continue
            ng_by_block.setdefault((pool, pricing), []).append(r)
            provided.setdefault((pool, pricing), []).append(r.address)
            inst = r.own_instance_type()
            b = ctx.blocks.get((site, pool, pricing))
            if b is not None and inst is not None and inst != b.instance:
                out.append(f"{where}: node group runs {inst}, block {b.label} is {b.instance}")
            if r.spot() != (pricing == "spot"):
                out.append(f"{where}: node group for {pool}/{pricing} is {'spot' if r.spot() else 'not spot'}; "
                           f"it must be spot iff the pricing is spot")
            if not _tainted(r):
                out.append(f"{where}: node group lacks the taint nvidia.com/gpu=present:NoSchedule")
        for key, rs in ng_by_block.items():
            if len(rs) > 1:
                out.append(f"terraform: {site}: {len(rs)} node groups for block {key[0]}/{key[1]}: "
                           f"{', '.join(r.address for r in rs)}")
        # Slurm's instances and templates
        for r in instances + templates:
            b = _flavor_of(ctx, site, r, blocks)
            where = f"terraform: {site}: {r.address}"
            if b is None:
                out.append(f"{where}: cannot tell which block it provisions (no <domain>-<pricing> in its names, "
                           f"instance type {r.own_instance_type()})")
                continue
            provided.setdefault((b.domain, b.pricing), []).append(r.address)
            spot = r.spot() or any(t.spot() for t in resources if t.type == "aws_launch_template" and r.refers_to(t))
            if spot != (b.pricing == "spot"):
                out.append(f"{where}: provisions {b.domain}/{b.pricing} as {'spot' if spot else 'not spot'}")
            if b.instance == "?" or not b.s_peak:
                continue
            if r in instances:
                if b.elastic:
                    out.append(f"{where}: fixed instances for block {b.label}, whose Slurm share is elastic "
                               f"(State=CLOUD: started by the Resume program)")
            elif not b.elastic:
                out.append(f"{where}: a template for block {b.label}, whose Slurm share is static (fixed instances)")
        for b in blocks:
            key = (b.domain, b.pricing)
            if b.k_peak and key not in ng_by_block:
                out.append(f"terraform: {site}: block {b.label}: Kubernetes holds up to {b.k_peak} nodes but no node "
                           f"group is labelled {b.domain}/{b.pricing}")
            if b.s_peak:
                have = [a for a in provided.get(key, []) if not any(a == g.address for g in groups)]
                if not have and (not b.elastic or provider != "azure"):
                    what = "a template" if b.elastic else "fixed instances"
                    out.append(f"terraform: {site}: block {b.label}: Slurm holds up to {b.s_peak} nodes but Terraform "
                               f"has no {what} for it")
        for key, addrs in sorted(provided.items()):
            b = ctx.blocks.get((site, *key))
            if b is None:
                out.append(f"terraform: {site}: {addrs[0]} provisions {key[0]}/{key[1]}, a pool the plan does not have "
                           f"at {site}")
            elif not (b.s_peak or b.k_peak):
                out.append(f"terraform: {site}: {addrs[0]} provisions block {b.label}, which no placement holds")
        # reservations
        res_by_block: dict[tuple[str, str], list[TfResource]] = {}
        for r in reservations:
            b = _flavor_of(ctx, site, r, [b for b in blocks if b.pricing in RESERVED])
            where = f"terraform: {site}: {r.address}"
            if b is None:
                out.append(f"{where}: cannot tell which reserved block it reserves (instance type "
                           f"{r.own_instance_type()})")
                continue
            if b.pricing not in RESERVED or b.instance == "?":
                out.append(f"{where}: reserves {b.domain}/{b.pricing}, which is no reserved pool of the plan at {site}")
                continue
            res_by_block.setdefault((b.domain, b.pricing), []).append(r)
            inst = r.own_instance_type()
            if inst is not None and inst != b.instance:
                out.append(f"{where}: reserves {inst}, block {b.label} is {b.instance}")
        out += _check_months(ctx, site, blocks, ng_by_block, instances, res_by_block)
        # nothing else runs GPU instances
        known = NODE_GROUPS | INSTANCES | TEMPLATES | RESERVATIONS
        for r in resources:
            if r.type in known:
                continue
            hits = sorted({s for s in _strings(r.body) if s in gpu_types})
            if hits:
                out.append(f"terraform: {site}: {r.address} names GPU instance type {hits[0]}; only node groups, "
                           f"Slurm instances/templates and reservations may provision GPU nodes")
    return out


def month_run(b: Block, m: int) -> tuple[int, int]:
    """(Slurm's fixed instances, Kubernetes' node group) Terraform runs for a block in month m
    (docs/artifacts.md, "terraform/<site>/"): elastic shares, Kubernetes' holding k[m] and no
    Slurm instances (the Resume program starts them); static ones, of the R nodes the block has
    that month, Slurm min(its range, R - k[m]) and Kubernetes min(its range, R - Slurm's)."""
    if b.elastic:
        return 0, (b.k[m] if b.k_peak else 0)
    have = b.pool_monthly[m]
    slurm = max(0, min(b.size(b.slurm_range), have - b.k[m])) if b.s_peak else 0
    k8s = max(0, min(b.size(b.k8s_range), have - slurm)) if b.k_peak else 0
    return slurm, k8s


def _terms(ctx: Context, b: Block) -> list[tuple[int, int]]:
    """A reserved block's terms as (first month, month after the last), from plan.json."""
    length = {"reserved_1y": 12, "reserved_3y": 36}[b.pricing]
    pool = next((p for p in ctx.plan.pools if (p.site, slug(p.instance), p.pricing) == (b.site, b.domain, b.pricing)),
                None)
    return [(r.start_month, r.start_month + length) for r in (pool.reservations if pool else ()) if r.nodes > 0]


def _check_months(ctx: Context, site: str, blocks: list[Block], groups: dict, instances: list[TfResource],
                  reservations: dict) -> list[str]:
    """Month by month, what the folder runs with that month's variables (months/NNN.tfvars)
    equals what plan.json holds: per block, the reserved nodes R[m] (reserved pricings; none
    otherwise), Kubernetes' node group and Slurm's fixed instances as month_run says, and never
    more than the pool has that month. AWS reservations end on a date (`limited`), the end of the
    latest term running that month."""
    out: list[str] = []
    months = ctx.tf_months(site)
    by_block: dict[tuple[str, str], list[TfResource]] = {}
    for r in instances:
        b = _flavor_of(ctx, site, r, blocks)
        if b is not None:
            by_block.setdefault((b.domain, b.pricing), []).append(r)
    seen: set[str] = set()

    def once(line: str) -> None:
        key = re.sub(r"month \d+", "month", line)
        if key not in seen:
            seen.add(key)
            out.append(line)

    for b in blocks:
        key = (b.domain, b.pricing)
        rs = reservations.get(key, [])
        if b.pricing in RESERVED and any(b.pool_monthly) and not rs:
            out.append(f"terraform: {site}: reserved block {b.label} reserves up to {max(b.pool_monthly)} nodes "
                       f"but has no reservation")
        for m in range(ctx.months):
            v = months[m] if m < len(months) else {}
            want_s, want_k = month_run(b, m)

            def running(res: list[TfResource], size) -> int | None:
                total = 0
                for r in res:
                    count = tf_number(r.body.get("count", 1), v)
                    n = size(r)
                    if count is None or n is None:
                        once(f"terraform: {site}: {r.address}: month {m}: its count or size cannot be evaluated "
                             f"with the month's variables (count {r.body.get('count', 1)!r})")
                        return None
                    total += count * n
                return total

            def group_size(r: TfResource) -> int | None:
                lo, hi = (tf_number(x, v) for x in r.size())
                if lo is not None and hi is not None and lo != hi:
                    once(f"terraform: {site}: {r.address}: month {m}: node group sized {lo}..{hi}; each month's "
                         f"size is fixed")
                return hi

            k_run = running(groups.get(key, []), group_size) if b.k_peak or groups.get(key) else 0
            s_run = running(by_block.get(key, []), lambda r: tf_number(r.size()[1], v)) \
                if b.s_peak or by_block.get(key) else 0
            if k_run is not None and k_run != want_k:
                once(f"terraform: {site}: block {b.label} month {m}: the node group runs {k_run} nodes, the plan "
                     f"{want_k}")
            if s_run is not None and s_run != want_s:
                once(f"terraform: {site}: block {b.label} month {m}: Slurm's fixed instances are {s_run}, the plan "
                     f"{want_s}")
            if k_run is not None and s_run is not None and k_run + s_run > b.pool_monthly[m]:
                once(f"terraform: {site}: block {b.label} month {m}: runs {k_run + s_run} nodes, more than the "
                     f"{b.pool_monthly[m]} the plan holds")
            want_r = b.pool_monthly[m] if b.pricing in RESERVED else 0
            got_r = running(rs, lambda r: tf_number(r.reservation_count(), v)) if rs else 0
            if got_r is not None and got_r != want_r:
                once(f"terraform: {site}: block {b.label} month {m}: reservations hold {got_r} nodes, the plan "
                     f"reserves {want_r}")
            if b.provider == "aws" and want_r:
                ends = [end for first, end in _terms(ctx, b) if first <= m < end]
                for r in rs:
                    if r.body.get("end_date_type") != "limited":
                        once(f"terraform: {site}: {r.address}: end_date_type {r.body.get('end_date_type')!r}: the "
                             f"reservation outlives its terms; it must be limited to their end")
                        continue
                    k = _var_key(r.body.get("instance_count"), "reserved_nodes")
                    end = _as_int((v.get("reservation_end_month") or {}).get(k)) if k else None
                    if ends and end != max(ends):
                        once(f"terraform: {site}: {r.address} month {m}: ends in plan month {end}, the latest term "
                             f"running then ends in month {max(ends)}")
    return out


def _tainted(r: TfResource) -> bool:
    if r.type == "azurerm_kubernetes_cluster_node_pool":
        return "nvidia.com/gpu=present:NoSchedule" in (r.body.get("node_taints") or [])
    taints = r.body.get("taint") if r.type == "aws_eks_node_group" else _first(r.body, "node_config", "taint")
    if isinstance(taints, dict):
        taints = [taints]
    for t in taints or ():
        if (t.get("key"), t.get("value"), str(t.get("effect", "")).upper().replace("_", "")) == \
                ("nvidia.com/gpu", "present", "NOSCHEDULE"):
            return True
    return False


FABRIC_CATEGORIES = {"switch", "switches", "optics", "fabric", "cable", "cables", "nic", "nics"}


def check_bom(ctx: Context) -> list[str]:
    """onprem/<site>/bom.csv: bought nodes = purchase pools at capex; owned nodes listed at $0;
    fabric lines = bought nodes x (ports x cost_per_port + 3 x ports / radix x switch cost) of
    each pool's fabric; storage ceil(capacity) TB of on-prem tiers at capex per TB; each line's
    total = quantity x unit; the total line = the sum of the lines."""
    out: list[str] = []
    for site, sp in ctx.sites.items():
        if sp.type == "cloud":
            if (ctx.out / "onprem" / site).exists():
                out.append(f"bom: onprem/{site}/ exists for a cloud site")
            continue
        pools = [p for p in ctx.plan.pools if p.site == site and p.nodes > 0]
        storage = [s for s in ctx.plan.storage if s.site == site
                   and ctx.hw.storage.get(s.tier, ("", 0))[0] == "on_prem" and s.capacity_tb > 0]
        text = ctx.text(f"onprem/{site}/bom.csv")
        if text is None:
            if pools or storage:
                out.append(f"bom: {site}: onprem/{site}/bom.csv is missing")
            continue
        rows = list(csv.DictReader(io.StringIO(text)))
        cols = rows[0].keys() if rows else []
        qcol = next((c for c in cols if "quantity" in c or c == "qty"), None)
        ucol = next((c for c in cols if "unit" in c), None)
        tcol = next((c for c in cols if "total" in c), None)
        if not (rows and qcol and ucol and tcol and "category" in cols and "item" in cols):
            out.append(f"bom: {site}: bom.csv lacks category/item/quantity/unit/total columns (has {list(cols)})")
            continue
        where = f"bom: {site}: bom.csv"
        lines, total_rows = [], []
        for i, r in enumerate(rows, start=2):
            cat = (r.get("category") or "").strip().lower()
            if cat == "total":
                total_rows.append((i, r))
                continue
            q, u, t = _money(r.get(qcol)), _money(r.get(ucol)), _money(r.get(tcol))
            if q is None or u is None or t is None:
                out.append(f"{where} line {i} ({r.get('item')}): quantity/unit/total are not numbers")
                continue
            if abs(q * u - t) > MONEY_TOL + 1e-9 * abs(t):
                out.append(f"{where} line {i} ({r.get('item')}): {q:g} x ${u:,.2f} = ${q * u:,.2f}, written ${t:,.2f}")
            lines.append((i, cat, (r.get("item") or "").strip(), (r.get("description") or ""), q, u, t))
        # nodes
        node_lines = [ln for ln in lines if ln[1] in ("node", "nodes", "server", "servers")]
        for pricing in ("owned", "purchase"):
            by_inst: dict[str, int] = {}
            for p in pools:
                if p.pricing == pricing:
                    by_inst[p.instance] = by_inst.get(p.instance, 0) + p.nodes
            mine = [ln for ln in node_lines if ("owned" in ln[3].lower()) == (pricing == "owned")]
            listed: dict[str, float] = {}
            for i, _c, item, _d, q, u, t in mine:
                listed[item] = listed.get(item, 0) + q
                if pricing == "owned" and (u != 0 or t != 0):
                    out.append(f"{where} line {i}: owned {item} priced ${u:,.2f} each, ${t:,.2f} in all; owned nodes "
                               f"are listed at $0")
                if pricing == "purchase" and item in by_inst:
                    capex = ctx.hw.machines.get(item, Machine(item, "", 0, "on_prem")).capex_usd
                    if abs(u - capex) > MONEY_TOL:
                        out.append(f"{where} line {i}: {item} at ${u:,.2f} each, the catalog's capex is ${capex:,.2f}")
            for inst in sorted(set(by_inst) | set(listed)):
                if listed.get(inst, 0) != by_inst.get(inst, 0):
                    what = "owned" if pricing == "owned" else "bought"
                    out.append(f"{where}: {listed.get(inst, 0):g} {what} {inst} nodes listed, the plan's "
                               f"{pricing} pool has {by_inst.get(inst, 0)}")
        # the month each bought node lands: the first month an orchestrator holds it (Slurm
        # 1..s[m], Kubernetes N-k[m]+1..N); a node no month holds lands with the first
        if any(p.pricing == "purchase" for p in pools):
            if "month" not in cols:
                out.append(f"{where}: no month column: bought nodes do not say the month they are first needed")
            else:
                for p in pools:
                    b = ctx.blocks.get((site, slug(p.instance), "purchase"))
                    if p.pricing != "purchase" or b is None:
                        continue
                    firsts = [next((m for m in range(ctx.months) if i <= b.s[m] or i > b.nodes - b.k[m]), None)
                              for i in range(1, b.nodes + 1)]
                    earliest = min((m for m in firsts if m is not None), default=0)
                    want: dict[int, int] = {}
                    for m in firsts:
                        want[earliest if m is None else m] = want.get(earliest if m is None else m, 0) + 1
                    got: dict[int | None, float] = {}
                    for r in rows:
                        if (r.get("category") or "").strip().lower() in ("node", "nodes", "server", "servers") and \
                                (r.get("item") or "").strip() == p.instance and "owned" not in (r.get("description") or "").lower():
                            month = _as_int(r.get("month"))
                            got[month] = got.get(month, 0) + (_money(r.get(qcol)) or 0)
                    if {m: float(n) for m, n in want.items()} != got:
                        out.append(f"{where}: bought {p.instance} nodes land in months "
                                   f"{ {m: int(n) for m, n in sorted(got.items(), key=lambda x: (x[0] is None, x[0] or 0))} }, "
                                   f"first needed in months {dict(sorted(want.items()))}")
        # fabric
        want_fabric: dict[str, float] = {}
        for p in pools:
            if p.pricing == "purchase":
                fig = ctx.hw.fabrics.get(p.fabric)
                if fig is None:
                    out.append(f"{where}: pool {p.instance} has fabric {p.fabric}, unknown to the catalog")
                    continue
                want_fabric[p.fabric] = want_fabric.get(p.fabric, 0.0) + p.nodes * fig.per_node_usd()
        fab_lines = [ln for ln in lines if ln[1] in FABRIC_CATEGORIES]
        got_total = sum(ln[6] for ln in fab_lines)
        if abs(got_total - sum(want_fabric.values())) > MONEY_TOL * max(1, len(fab_lines)):
            detail = "; ".join(f"{f}: ${v:,.2f}" for f, v in sorted(want_fabric.items())) or "no bought nodes"
            out.append(f"{where}: fabric lines total ${got_total:,.2f}, the plan priced ${sum(want_fabric.values()):,.2f} "
                       f"({detail})")
        else:
            for fab, want in sorted(want_fabric.items()):
                got = sum(ln[6] for ln in fab_lines if ln[2].startswith(fab))
                if all(any(ln[2].startswith(f) for f in want_fabric) for ln in fab_lines) and \
                        abs(got - want) > MONEY_TOL * max(1, len(fab_lines)):
                    out.append(f"{where}: fabric {fab} lines total ${got:,.2f}, the plan priced ${want:,.2f}")
        # storage
        want_tb: dict[str, int] = {}
        for s in storage:
            want_tb[s.tier] = want_tb.get(s.tier, 0) + math.ceil(s.capacity_tb - 1e-6)
        st_lines = [ln for ln in lines if ln[1] == "storage"]
        got_tb: dict[str, float] = {}
        for i, _c, item, _d, q, u, _t in st_lines:
            got_tb[item] = got_tb.get(item, 0) + q
            capex = ctx.hw.storage.get(item, ("", None))[1]
            if capex is None:
                out.append(f"{where} line {i}: storage {item} is no catalog storage tier")
            elif abs(u - capex) > MONEY_TOL:
                out.append(f"{where} line {i}: storage {item} at ${u:,.2f}/TB, the catalog's capex is ${capex:,.2f}/TB")
        for tier in sorted(set(want_tb) | set(got_tb)):
            if got_tb.get(tier, 0) != want_tb.get(tier, 0):
                out.append(f"{where}: storage {tier}: {got_tb.get(tier, 0):g} TB listed, the plan's capacity needs "
                           f"{want_tb.get(tier, 0)} TB (ceil)")
        known = {"node", "nodes", "server", "servers", "storage"} | FABRIC_CATEGORIES
        for i, cat, item, *_rest in lines:
            if cat not in known:
                out.append(f"{where} line {i}: category {cat!r} ({item}) is nothing the plan priced")
        # total
        if len(total_rows) != 1:
            out.append(f"{where}: {len(total_rows)} total lines, want one")
        for i, r in total_rows:
            t = _money(r.get(tcol))
            s = sum(ln[6] for ln in lines)
            if t is None or abs(t - s) > MONEY_TOL:
                out.append(f"{where} line {i}: total ${r.get(tcol)}, the lines add up to ${s:,.2f}")
    return out



# --- what the servers and launchers are told, and what the manifests reference ----------------
#
# docs/artifacts.md, "What the servers and launchers run": vLLM's own flags, read from the
# container's args; the quantization flags per weight width are the contract's table, and the
# KV cache's width is the catalog's kv_bytes figure (1 byte: fp8 cache; 2: the server's default).

QUANT_FLAG = {"bf16": None, "fp8": "fp8", "int8": "compressed-tensors", "int4": "awq", "fp4": "modelopt_fp4"}
LAUNCHER_DEGREES = ("tensor", "pipeline", "context", "expert", "data")


@functools.lru_cache(maxsize=None)
def _kv_bytes(quantization: str) -> float | None:
    data = yaml.safe_load((CATALOG_DATA / "performance.yaml").read_text(encoding="utf-8"))
    for entry in _dicts(data):
        if entry.get("name") == f"kv_bytes.{quantization}":
            return float(entry["value"])
    return None


def _list_flag(tokens: list[str], flag: str) -> list[str]:
    """The values a list flag (`--flag a b c`) takes: the tokens after it up to the next option."""
    if flag not in tokens:
        return []
    rest = tokens[tokens.index(flag) + 1:]
    return [t for t in itertools.takewhile(lambda t: not str(t).startswith("-"), rest)]


def _flags(args: Iterable[Any]) -> dict[str, str]:
    """`--key=value` and `--key value` arguments as a dict (a bare `--flag` maps to "")."""
    out: dict[str, str] = {}
    items = [str(a) for a in args or ()]
    i = 0
    while i < len(items):
        a = items[i]
        if a.startswith("--"):
            key, eq, value = a[2:].partition("=")
            if not eq and i + 1 < len(items) and not items[i + 1].startswith("--"):
                value = items[i + 1]
                i += 1
            out[key] = value
        i += 1
    return out


def _pod_references(pod: dict) -> list[tuple[str, str]]:
    """(kind, name) of every object a pod spec names: claims, config maps, secrets, service accounts."""
    refs: list[tuple[str, str]] = []
    for v in pod.get("volumes") or ():
        if (v.get("persistentVolumeClaim") or {}).get("claimName"):
            refs.append(("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"]))
        if (v.get("configMap") or {}).get("name"):
            refs.append(("ConfigMap", v["configMap"]["name"]))
        if (v.get("secret") or {}).get("secretName"):
            refs.append(("Secret", v["secret"]["secretName"]))
    if pod.get("serviceAccountName"):
        refs.append(("ServiceAccount", pod["serviceAccountName"]))
    for c in list(pod.get("containers") or ()) + list(pod.get("initContainers") or ()):
        for e in c.get("envFrom") or ():
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                if (e.get(key) or {}).get("name"):
                    refs.append((kind, e[key]["name"]))
        for e in c.get("env") or ():
            src = e.get("valueFrom") or {}
            for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if (src.get(key) or {}).get("name"):
                    refs.append((kind, src[key]["name"]))
    return refs


def _jobset_pods(doc: dict) -> list[dict]:
    return [(((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            for rj in ((doc.get("spec") or {}).get("replicatedJobs") or ())]


def check_references(ctx: Context) -> list[str]:
    """Every object a manifest names is created in the same site's folder and namespace: the
    claims, config maps, secrets and service accounts its pods use (a LeaderWorkerSet's leaders'
    and workers'), the Deployment or LeaderWorkerSet an HPA scales, the LocalQueue a JobSet is queued in and the ClusterQueue and flavors behind it."""
    out: list[str] = []
    for site in ctx.sites:
        docs = ctx.k8s_docs(site)
        created = {(d.get("kind"), (d.get("metadata") or {}).get("namespace"), (d.get("metadata") or {}).get("name"))
                   for _f, d in docs}
        cluster = {(d.get("kind"), (d.get("metadata") or {}).get("name")) for _f, d in docs}
        for f, d in docs:
            kind, meta = d.get("kind"), d.get("metadata") or {}
            ns, name = meta.get("namespace"), meta.get("name")
            lwt = (d.get("spec") or {}).get("leaderWorkerTemplate") or {}
            pods = ([_pod_spec(d)] if kind == "Deployment" else _jobset_pods(d) if kind == "JobSet"
                    else [(lwt.get(t) or {}).get("spec") or {} for t in ("leaderTemplate", "workerTemplate")]
                    if kind == LWS_KIND else [])
            for pod in pods:
                for rkind, rname in _pod_references(pod):
                    if (rkind, ns, rname) not in created:
                        out.append(f"references: {site}: {f}: {kind} {name} uses {rkind} {rname}, which no manifest "
                                   f"in kubernetes/{site}/ creates in namespace {ns}")
            if kind == "HorizontalPodAutoscaler":
                ref = (d.get("spec") or {}).get("scaleTargetRef") or {}
                if (ref.get("kind"), ns, ref.get("name")) not in created:
                    out.append(f"references: {site}: {f}: HPA {name} scales {ref.get('kind')} {ref.get('name')}, "
                               f"which kubernetes/{site}/ does not create")
            if kind == "JobSet":
                queue = _labels(d).get("kueue.x-k8s.io/queue-name")
                if queue and ("LocalQueue", ns, queue) not in created:
                    out.append(f"references: {site}: {f}: JobSet {name} is queued in LocalQueue {queue}, which "
                               f"kubernetes/{site}/ does not create")
            if kind == "LocalQueue":
                cq = (d.get("spec") or {}).get("clusterQueue")
                if ("ClusterQueue", cq) not in cluster:
                    out.append(f"references: {site}: {f}: LocalQueue {name} feeds ClusterQueue {cq}, which "
                               f"kubernetes/{site}/ does not create")
            if kind == "ClusterQueue":
                for group in (d.get("spec") or {}).get("resourceGroups") or ():
                    for fl in group.get("flavors") or ():
                        if ("ResourceFlavor", fl.get("name")) not in cluster:
                            out.append(f"references: {site}: {f}: ClusterQueue {name} uses ResourceFlavor "
                                       f"{fl.get('name')}, which kubernetes/{site}/ does not create")
    return out


def check_serving(ctx: Context) -> list[str]:
    """Each Deployment's server runs what its placement sized: tensor x pipeline x data parallel =
    the GPUs a pod gets (a LeaderWorkerSet group's pods together, each told its share and the group's
    leader: _check_multi_node), each degree the placement's (expert parallel where its layout's ep is), its
    batch (over its data-parallel engines), the plan's context length and
    quantization (weights and KV cache), with the model read from a mounted volume."""
    out: list[str] = []
    for site in ctx.sites:
        services = [(w, p) for w, p in ctx.placements(site, "kubernetes", "inference") if p.replicas > 0]
        names = {w.name for w, _p in services}
        for f, d in _server_docs(ctx, site):
            name = (d.get("metadata") or {}).get("name", "")
            pod = _pod_spec(d)
            per_pod = _pod_gpus(pod)
            gpus = per_pod * _pods_a_replica(d)     # the replica's: a LeaderWorkerSet group's pods all
            pool = (pod.get("nodeSelector") or {}).get(POOL_LABEL)
            wname = _match_workload(name, _labels(d), names)
            role = _pod_labels(d).get(ROLE_LABEL)
            if role is not None:
                cands = [(w, p) for w, p in services if w.name == wname and slug(p.instance) == pool
                         and (_role_layout(p, role) or (0, 0))[0] == gpus]
            else:
                cands = [(w, p) for w, p in services if w.name == wname and slug(p.instance) == pool
                         and getattr(p, "disaggregation", None) is None
                         and (p.gpus_per_replica or max(1, p.gpus // max(1, p.replicas))) == gpus]
            if not cands:
                continue            # check_kubernetes names a Deployment no placement matches
            w, p = cands[0]
            where = f"serving: {site}: {f}: {d.get('_kind', 'Deployment')} {name}"
            if role is not None:
                out += _check_pd_server(where, ctx, site, name, w, p, role, pod)
                continue
            if _vision(w):
                out += _check_triton_server(where, ctx, site, name, w, p, pod)
                continue
            servers = [c for c in pod.get("containers") or () if _pod_gpus({"containers": [c]})]
            if len(servers) != 1:
                out.append(f"{where}: {len(servers)} containers ask for GPUs, expected the one server")
                continue
            c = servers[0]
            flags = _flags(list(c.get("command") or ()) + list(c.get("args") or ()))
            tp = _as_int(flags.get("tensor-parallel-size", "1"))
            pp = _as_int(flags.get("pipeline-parallel-size", "1"))
            dp = _as_int(flags.get("data-parallel-size", "1"))
            if tp is None or pp is None or dp is None or tp * pp * dp != gpus:
                out.append(f"{where}: the server runs tensor {flags.get('tensor-parallel-size', 1)} x pipeline "
                           f"{flags.get('pipeline-parallel-size', 1)} x data {flags.get('data-parallel-size', 1)} "
                           f"on the {gpus} GPUs a pod gets")
            layout = getattr(p, "layout", None)
            want_tp = layout.tp if layout is not None else p.gpus_per_replica
            want_pp = layout.pp if layout is not None else 1
            # attention data parallel with expert parallel MoE layers: the layout's dp = ep > 1
            expert = layout is not None and getattr(layout, "ep", 1) > 1
            want_dp = layout.dp if expert else 1
            if (tp, pp, dp) != (want_tp, want_pp, want_dp):
                out.append(f"{where}: tensor {tp} x pipeline {pp} x data {dp}, the plan sized tensor {want_tp} x "
                           f"pipeline {want_pp} x data {want_dp} ({p.candidate})")
            if d.get("_kind") == LWS_KIND or flags.get("data-parallel-size-local") is not None:
                out += _check_multi_node(where, d, c, flags, per_pod)
            if expert != ("enable-expert-parallel" in flags):
                out.append(f"{where}: " + (f"the plan runs the experts expert parallel over {layout.ep} GPUs "
                                            "(layout ep), the server is not told --enable-expert-parallel" if expert
                                            else "--enable-expert-parallel, where the plan sized no expert parallelism"))
            batch = getattr(p, "batch", 0) or w.estimate.batch
            # each data-parallel rank is its own engine: the replica's batch over them, rounded up
            engine = -(-batch // max(1, want_dp))
            if _as_int(flags.get("max-num-seqs")) != engine:
                out.append(f"{where}: --max-num-seqs={flags.get('max-num-seqs')}, the plan sized batch {batch}"
                           + (f" over {want_dp} data-parallel engines ({engine} each)" if want_dp > 1 else ""))
            max_len = getattr(w, "max_model_len", 0)
            if not max_len:
                out.append(f"{where}: plan.json gives {w.name} no max_model_len")
            elif _as_int(flags.get("max-model-len")) != max_len:
                out.append(f"{where}: --max-model-len={flags.get('max-model-len')}, the plan sized "
                           f"{max_len} tokens per sequence")
            quant = getattr(w, "quantization", "")
            if quant not in QUANT_FLAG:
                out.append(f"{where}: plan.json gives {w.name} quantization {quant!r}")
            else:
                if flags.get("quantization") != QUANT_FLAG[quant]:
                    out.append(f"{where}: --quantization={flags.get('quantization')}, the plan sized {quant} weights "
                               f"(contract: {QUANT_FLAG[quant] or 'no flag'})")
                kv = _kv_bytes(quant)
                want_kv = "fp8" if kv == 1 else "auto"
                if flags.get("kv-cache-dtype", "auto") != want_kv:
                    out.append(f"{where}: --kv-cache-dtype={flags.get('kv-cache-dtype', 'auto')}, the plan sized a "
                               f"{kv:g}-byte KV cache ({want_kv})")
            mounts = _mounts(c)
            out += _check_model_mounted(where, flags, mounts)
            out += _check_choices(where, flags, w.inputs.document if w.inputs is not None else {}, mounts)
            out += _check_hpa_target(where, ctx, site, name, batch, w)
    return out


WIDE_EP_BACKEND = ("VLLM_ALL2ALL_BACKEND", "deepep_low_latency")
START_RANK = re.compile(r"--data-parallel-start-rank[= ]\$\(\(\s*\$?\{?LWS_WORKER_INDEX\}?\s*\*\s*(\d+)\s*\)\)")


def _env(container: dict) -> dict:
    return {e.get("name"): e.get("value") for e in container.get("env") or () if isinstance(e, dict)}


def _check_multi_node(where: str, d: dict, leader: dict, flags: dict, per_pod: int) -> list[str]:
    """A replica over several nodes (vLLM's multi-node data parallel deployment, one LeaderWorkerSet
    group): every pod holds --data-parallel-size-local = its GPUs of the --data-parallel-size ranks and
    reaches the group's leader (--data-parallel-address $(LWS_LEADER_ADDRESS), an RPC port); the leader
    serves the API, each worker runs --headless from rank LWS_WORKER_INDEX x its GPUs, with the same
    flags otherwise; all run DeepEP's low-latency all-to-all (the kernels the estimate's all-to-all is
    checked against). Such flags outside a LeaderWorkerSet have no group to join."""
    out: list[str] = []
    if d.get("_kind") != LWS_KIND:
        return [f"{where}: told --data-parallel-size-local={flags.get('data-parallel-size-local')}, a multi-node "
                "data-parallel rank set, but its pods are no LeaderWorkerSet group"]
    size = d.get("_size", 1)
    local = _as_int(flags.get("data-parallel-size-local"))
    if local != per_pod:
        out.append(f"{where}: --data-parallel-size-local={flags.get('data-parallel-size-local')}, a pod has {per_pod} "
                   f"GPUs ({size} pods a replica)")
    if flags.get("data-parallel-address") != "$(LWS_LEADER_ADDRESS)":
        out.append(f"{where}: --data-parallel-address={flags.get('data-parallel-address')}, not the group's leader "
                   "($(LWS_LEADER_ADDRESS))")
    if _as_int(flags.get("data-parallel-rpc-port")) is None:
        out.append(f"{where}: no --data-parallel-rpc-port for the group's ranks to meet on")
    if "headless" in flags:
        out.append(f"{where}: the leader runs --headless: no API server would take the group's requests")
    if _env(leader).get(WIDE_EP_BACKEND[0]) != WIDE_EP_BACKEND[1]:
        out.append(f"{where}: the leader runs {WIDE_EP_BACKEND[0]}={_env(leader).get(WIDE_EP_BACKEND[0])}, "
                   f"not {WIDE_EP_BACKEND[1]}")
    workers = [c for c in ((d.get("_worker") or {}).get("spec") or {}).get("containers") or ()
               if _pod_gpus({"containers": [c]})]
    if len(workers) != 1:
        return out + [f"{where}: {len(workers)} worker containers ask for GPUs, expected the one server"]
    wc = workers[0]
    command = [str(x) for x in wc.get("command") or ()]
    wflags = _flags(command + list(wc.get("args") or ()))
    if "headless" not in wflags:
        out.append(f"{where}: its workers are not told --headless: each would start an API server")
    same = {k: v for k, v in flags.items() if k not in ("headless",)}
    wsame = {k: v for k, v in wflags.items() if k not in ("headless", "data-parallel-start-rank")}
    if wsame != same:
        diff = sorted(k for k in set(same) | set(wsame) if same.get(k) != wsame.get(k))
        out.append(f"{where}: its workers' flags differ from the leader's in {', '.join('--' + k for k in diff)}")
    hit = [m for x in command for m in START_RANK.finditer(x)]
    if not hit:
        out.append(f"{where}: its workers' start rank is not LWS_WORKER_INDEX x the GPUs a pod "
                   "(--data-parallel-start-rank=$((LWS_WORKER_INDEX * n)))")
    elif _as_int(hit[0].group(1)) != per_pod:
        out.append(f"{where}: its workers start at rank LWS_WORKER_INDEX x {hit[0].group(1)}, a pod holds {per_pod} "
                   "ranks")
    if _env(wc).get(WIDE_EP_BACKEND[0]) != WIDE_EP_BACKEND[1]:
        out.append(f"{where}: its workers run {WIDE_EP_BACKEND[0]}={_env(wc).get(WIDE_EP_BACKEND[0])}, "
                   f"not {WIDE_EP_BACKEND[1]}")
    return out


def _check_pd_server(where: str, ctx: "Context", site: str, name: str, w: Any, p: Any, role: str,
                     pod: dict) -> list[str]:
    """One role of a disaggregated placement: the server runs the role's tensor parallel on its
    GPUs, the role's batch (one prompt at a time on prefill, the placement's on decode), the
    plan's context length and quantization, and vLLM's NixlConnector; a decode pod's routing
    sidecar sends to the server's port. Prompts are cached where prefilled, tokens drafted where
    decoded."""
    out: list[str] = []
    tp_want, _n = _role_layout(p, role) or (0, 0)
    servers = [c for c in pod.get("containers") or () if _pod_gpus({"containers": [c]})]
    if len(servers) != 1:
        return [f"{where}: {len(servers)} containers ask for GPUs, expected the one {role} server"]
    c = servers[0]
    flags = _flags(list(c.get("command") or ()) + list(c.get("args") or ()))
    tp, pp = _as_int(flags.get("tensor-parallel-size", "1")), _as_int(flags.get("pipeline-parallel-size", "1"))
    g = p.disaggregation
    if (tp, pp) != (tp_want, 1):
        out.append(f"{where}: the {role} server runs tensor {tp} x pipeline {pp}, the plan's unit ({g.prefill_instances} "
                   f"prefill x tp{g.prefill_tp} + {g.decode_instances} decode x tp{g.decode_tp}) sized tensor "
                   f"{tp_want} x pipeline 1")
    batch = PD_PREFILL_BATCH if role == "prefill" else (getattr(p, "batch", 0) or w.estimate.batch)
    if _as_int(flags.get("max-num-seqs")) != batch:
        out.append(f"{where}: --max-num-seqs={flags.get('max-num-seqs')}, the plan sized the {role} servers at "
                   f"batch {batch}")
    max_len = getattr(w, "max_model_len", 0)
    if max_len and _as_int(flags.get("max-model-len")) != max_len:
        out.append(f"{where}: --max-model-len={flags.get('max-model-len')}, the plan sized {max_len} tokens per sequence")
    quant = getattr(w, "quantization", "")
    if quant in QUANT_FLAG and flags.get("quantization") != QUANT_FLAG[quant]:
        out.append(f"{where}: --quantization={flags.get('quantization')}, the plan sized {quant} weights")
    raw = flags.get("kv-transfer-config")
    try:
        kv = json.loads(raw) if raw is not None else None
    except ValueError:
        kv = "bad"
    if not isinstance(kv, dict) or kv.get("kv_connector") != PD_CONNECTOR or kv.get("kv_role") not in (
            "kv_both", "kv_producer" if role == "prefill" else "kv_consumer"):
        out.append(f"{where}: the {role} server is told --kv-transfer-config={raw}, the plan's disaggregated layout "
                   f"needs vLLM's {PD_CONNECTOR} (kv_role kv_both, or kv_{'producer' if role == 'prefill' else 'consumer'})")
    port = _as_int(flags.get("port", "8000"))
    if role == "decode":
        sidecars = [s for s in pod.get("initContainers") or () if s.get("restartPolicy") == "Always"]
        told = [_flags(list(s.get("command") or ()) + list(s.get("args") or ())) for s in sidecars]
        if not any(_as_int(f.get("vllm-port")) == port for f in told):
            out.append(f"{where}: no routing sidecar sends to the decode server's port {port} "
                       f"(sidecars' --vllm-port: {[f.get('vllm-port') for f in told]})")
    mounts = _mounts(c)
    out += _check_model_mounted(where, flags, mounts)
    inputs = dict(w.inputs.document) if w.inputs is not None and isinstance(w.inputs.document, dict) else {}
    if role == "decode":
        inputs["traffic"] = {k: v for k, v in (inputs.get("traffic") or {}).items() if k != "prefix_cache_hit"}
    else:
        inputs.pop("speculative", None)
    out += _check_choices(where, flags, inputs, mounts)
    out += _check_hpa_target(where, ctx, site, name, batch, w if role == "decode" else None)
    return out


# A vision model's service (docs/artifacts.md, "Vision services"): Triton Inference Server, its
# model repository's config.pbtxt read from a ConfigMap.
TRITON_READY = "/v2/health/ready"
TRITON_CONFIG = "config.pbtxt"


def _vision(w: Any) -> bool:
    """A vision model's service: plan.json states its capacity in images/s."""
    return getattr(w.estimate, "images_per_s", None) is not None


def _pbtxt(text: str) -> dict[str, Any]:
    """The figures of a Triton model configuration (protobuf text) the contract names: the model's
    name, its max_batch_size, whether it batches dynamically and how long the batcher waits, and
    whether its instances run on the GPU."""
    def num(key: str) -> int | None:
        m = re.search(rf"(?m)^\s*{key}\s*:\s*(-?\d+)\s*$", text)
        return int(m.group(1)) if m else None
    name = re.search(r'(?m)^name\s*:\s*"([^"]*)"', text)      # the top level's, not an accelerator's
    return {"name": name.group(1) if name else None, "max_batch_size": num("max_batch_size"),
            "dynamic_batching": re.search(r"(?m)^\s*dynamic_batching\s*\{", text) is not None,
            "max_queue_delay_microseconds": num("max_queue_delay_microseconds"),
            "gpu": re.search(r"kind\s*:\s*KIND_GPU", text) is not None}


def _config_maps(ctx: "Context", site: str) -> dict[str, dict]:
    return {(d.get("metadata") or {}).get("name"): d for _f, d in ctx.k8s_kind(site, "ConfigMap")}


def _mounted_files(pod: dict, container: dict, maps: dict[str, dict]) -> dict[str, str]:
    """Path in the container -> text, of every ConfigMap key the container mounts (a whole map as
    a folder of its keys, or one key by subPath)."""
    volumes = {v.get("name"): (v.get("configMap") or {}).get("name") for v in pod.get("volumes") or ()
               if v.get("configMap")}
    out: dict[str, str] = {}
    for m in container.get("volumeMounts") or ():
        cm = maps.get(volumes.get(m.get("name")))
        if cm is None:
            continue
        data = cm.get("data") or {}
        path = str(m.get("mountPath", "")).rstrip("/")
        if m.get("subPath"):
            if m["subPath"] in data:
                out[path] = str(data[m["subPath"]])
        else:
            out.update({f"{path}/{k}": str(v) for k, v in data.items()})
    return out


def _check_triton_server(where: str, ctx: "Context", site: str, name: str, w: Any, p: Any, pod: dict) -> list[str]:
    """A vision placement's server: Triton on one GPU a replica, reading a model repository from
    mounts, the model's config.pbtxt (from a ConfigMap) naming its folder, batching dynamically up
    to the placement's batch on the GPU, its batcher's wait within the latency bound, ready on
    /v2/health/ready, its autoscaler below the batch."""
    out: list[str] = []
    servers = [c for c in pod.get("containers") or () if _pod_gpus({"containers": [c]})]
    if len(servers) != 1:
        return [f"{where}: {len(servers)} containers ask for GPUs, expected the one Triton server"]
    c = servers[0]
    tokens = [str(a) for a in list(c.get("command") or ()) + list(c.get("args") or ())]
    if not tokens or not tokens[0].endswith("tritonserver"):
        out.append(f"{where}: the server runs {tokens[:1]}, a vision service's server is tritonserver")
    flags = _flags(tokens)
    if _pod_gpus(pod) != 1 or (p.gpus_per_replica or 1) != 1:
        out.append(f"{where}: a vision replica is one GPU; the pod asks {_pod_gpus(pod)}, the plan sized "
                   f"{p.gpus_per_replica}")
    repo = flags.get("model-repository", "").rstrip("/")
    mounts = _mounts(c)
    files = _mounted_files(pod, c, _config_maps(ctx, site))
    configs = {path: text for path, text in files.items()
               if repo and path.startswith(repo + "/") and path.endswith("/" + TRITON_CONFIG)
               and path.count("/") == repo.count("/") + 2}
    batch = getattr(p, "batch", 0) or w.estimate.batch
    if not repo:
        out.append(f"{where}: the server is told no --model-repository")
    elif not configs:
        out.append(f"{where}: no ConfigMap gives a {TRITON_CONFIG} in a model folder of its repository {repo}")
    for path, text in sorted(configs.items()):
        folder = path[len(repo) + 1:].split("/")[0]
        cfg = _pbtxt(text)
        if cfg["name"] not in (None, folder):
            out.append(f"{where}: {path} names the model {cfg['name']!r}, its folder is {folder!r}")
        if cfg["max_batch_size"] != batch:
            out.append(f"{where}: {path}: max_batch_size {cfg['max_batch_size']}, the plan sized batch {batch}")
        if not cfg["dynamic_batching"]:
            out.append(f"{where}: {path} does not batch dynamically: each request would run alone")
        if not cfg["gpu"]:
            out.append(f"{where}: {path} runs no instance on the GPU (instance_group kind KIND_GPU)")
        stated = ((w.inputs.document or {}).get("slo") or {}).get("latency_p99_ms") if w.inputs is not None else None
        bound = _sized_bounds(w).get("latency_p99_ms")      # the bound less the service's headroom
        delay = cfg["max_queue_delay_microseconds"] or 0
        latency = getattr(w.estimate, "latency_ms", None)
        if bound is not None and latency is not None and batch == w.estimate.batch \
                and delay / 1000 + latency > bound + 1e-3:
            out.append(f"{where}: {path}: the batcher waits up to {delay} us for a batch that takes {latency} ms, "
                       f"past the {stated} ms latency bound less the service's headroom ({bound:g} ms)")
        version = f"{repo}/{folder}/1"
        if not any(version == m.rstrip("/") or version.startswith(m.rstrip("/") + "/") for m in mounts):
            out.append(f"{where}: the model's version folder {version} is on no volume mount")
    ports = {pt.get("name"): pt.get("containerPort") for pt in c.get("ports") or ()}
    probe = (c.get("readinessProbe") or {}).get("httpGet") or {}
    if probe.get("path") != TRITON_READY or (probe.get("port") not in ports
                                             and probe.get("port") not in ports.values()):
        out.append(f"{where}: the readiness probe asks {probe.get('path')} on port {probe.get('port')}; Triton is "
                   f"ready on {TRITON_READY} of a port it listens on ({sorted(ports)})")
    out += _check_hpa_target(where, ctx, site, name, batch, w)
    return out


# vLLM's speculative methods by the spec's kind: a draft model, or heads on the model
SPEC_METHODS = {"draft": {"draft_model", None}, "heads": {"eagle", "eagle3", "medusa", "mlp_speculator", "mtp",
                                                          "deepseek_mtp"}}


def _mounts(container: dict) -> list[str]:
    return [m.get("mountPath", "") for m in container.get("volumeMounts") or ()]


def _check_model_mounted(where: str, flags: dict, mounts: list[str]) -> list[str]:
    """The server's --model is a path some volume mount provides."""
    model = flags.get("model", "")
    if any(model == m or model.startswith(m.rstrip("/") + "/") for m in mounts):
        return []
    return [f"{where}: the server loads --model={model}, which no volume mount provides"]


def _check_choices(where: str, flags: dict[str, str], inputs: dict, mounts: list[str]) -> list[str]:
    """The serving choices the spec states reach the server: prefix caching where the traffic
    states a cache share, speculative decoding (its method and tokens a step, the draft read from
    a mounted volume) where stated, and no speculation where none is."""
    out: list[str] = []
    hit = ((inputs.get("traffic") or {}).get("prefix_cache_hit")) or 0
    if hit and ("enable-prefix-caching" not in flags or "no-enable-prefix-caching" in flags):
        out.append(f"{where}: the plan sized a {hit:g} prefix-cache share, the server is not told "
                   "--enable-prefix-caching")
    spec = inputs.get("speculative")
    told = {k: v for k, v in flags.items() if k.startswith(("speculative", "num-speculative"))}
    if not spec:
        if told:
            out.append(f"{where}: the spec states no speculative decoding, the server is told "
                       f"{', '.join('--' + k for k in sorted(told))}")
        return out
    if "speculative-config" in flags:
        try:
            config = json.loads(flags["speculative-config"])
        except ValueError:
            return out + [f"{where}: --speculative-config is not JSON ({flags['speculative-config']!r})"]
        tokens, draft, method = config.get("num_speculative_tokens"), config.get("model", ""), config.get("method")
    elif "speculative-model" in flags:
        # before vLLM 0.8 the draft's own config names its kind: read the spec's
        tokens, draft = _as_int(flags.get("num-speculative-tokens")), flags["speculative-model"]
        method = None if spec["method"] == "draft" else "eagle"
    else:
        return out + [f"{where}: the plan sized speculative decoding ({spec['method']}, {spec['draft_tokens']} "
                      "tokens a step), the server is not told"]
    if tokens != spec["draft_tokens"]:
        out.append(f"{where}: the server drafts {tokens} tokens a step, the plan sized {spec['draft_tokens']}")
    if method not in SPEC_METHODS.get(spec["method"], set()):
        out.append(f"{where}: speculative method {method!r}, the spec states {spec['method']}")
    if not any(draft == m or str(draft).startswith(m.rstrip("/") + "/") for m in mounts):
        out.append(f"{where}: the draft is read from {draft!r}, which no volume mount provides")
    return out


# The latency bounds a service states (slo), each of which its replicas are sized within less the
# service's headroom (slo.headroom: the share of the bound kept free; 0 where plan.json records none).
SLO_BOUNDS = {"ttft_p99_ms": "ttft_ms", "tpot_p99_ms": "tpot_ms", "latency_p99_ms": "latency_ms"}


def _sized_bounds(w: Any) -> dict[str, float]:
    """Each latency bound of the service's slo as plan.json records it, x (1 - slo.headroom)."""
    slo = ((w.inputs.document or {}).get("slo") or {}) if w.inputs is not None else {}
    h = slo.get("headroom", 0)
    h = float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) and 0 <= h < 1 else 0.0
    return {k: float(v) * (1 - h) for k, v in slo.items()
            if k in SLO_BOUNDS and isinstance(v, (int, float)) and not isinstance(v, bool)}


def _check_hpa_target(where: str, ctx: "Context", site: str, name: str, batch: Any, w: Any = None) -> list[str]:
    """The autoscaler holds requests in flight per replica below the batch the plan sized (room
    for its tolerance and a new replica's start), and at least 1; and that batch, where `w`'s
    figures are its own (the workload's main placement), meets each latency bound less the
    service's headroom, so the target sits below the batch at the bounds by the headroom too."""
    hpa = next((d for _f, d in ctx.k8s_kind(site, "HorizontalPodAutoscaler")
                if ((d.get("spec") or {}).get("scaleTargetRef") or {}).get("name") == name), None)
    b = _as_int(batch)
    if hpa is None or b is None:
        return []
    targets = [((m.get("pods") or {}).get("target") or {}).get("averageValue")
               for m in (hpa.get("spec") or {}).get("metrics") or ()]
    out = []
    for t in targets:
        v = _as_int(t)
        if v is None or v < 1 or (v >= b if b > 1 else v != 1):
            out.append(f"{where}: the HPA targets {t} requests in flight per replica, the plan sized batch {b} "
                       "at the SLO (the target must be below it, at least 1)")
    if w is not None and targets and b == _as_int(getattr(w.estimate, "batch", None)):
        for key, bound in sorted(_sized_bounds(w).items()):
            figure = getattr(w.estimate, SLO_BOUNDS[key], None)
            if isinstance(figure, (int, float)) and figure > bound + 1e-3:
                out.append(f"{where}: the HPA's target is below batch {b}, which the plan sized at "
                           f"{SLO_BOUNDS[key]} {figure:g}, past slo.{key} less the service's headroom ({bound:g})")
    return out


def check_routing(ctx: Context) -> list[str]:
    """Each service with servers at a site is routed: an InferencePool whose selector holds every
    server pod of the service (and no other's), on the servers' port; its endpointPickerRef a
    Service in the folder, on a port that Service has, in front of a Deployment; an HTTPRoute from
    a Gateway the folder creates to the pool."""
    out: list[str] = []
    for site in ctx.sites:
        services = {w.name for w, p in ctx.placements(site, "kubernetes", "inference") if p.replicas > 0}
        if not services or not ctx.k8s_docs(site):
            continue
        deps = [(f, d) for f, d in _server_docs(ctx, site) if _pod_gpus(_pod_spec(d))]
        # a LeaderWorkerSet group's headless workers, which serve no requests: no pool may select them
        workers = [(f, (d.get("metadata") or {}).get("name"), (((d.get("_worker") or {}).get("metadata") or {})
                                                              .get("labels") or {}))
                   for f, d in deps if d.get("_kind") == LWS_KIND]
        pools = {(d.get("metadata") or {}).get("name"): d for _f, d in ctx.k8s_kind(site, "InferencePool")}
        k8s_services = {(d.get("metadata") or {}).get("name"): d for _f, d in ctx.k8s_kind(site, "Service")}
        gateways = {(d.get("metadata") or {}).get("name") for _f, d in ctx.k8s_kind(site, "Gateway")}
        routes = [d for _f, d in ctx.k8s_kind(site, "HTTPRoute")]
        for wname in sorted(services):
            servers = [(f, d) for f, d in deps if _match_workload((d.get("metadata") or {}).get("name", ""),
                                                                 _labels(d), services) == wname]
            pod_labels = [((((d.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
                          for _f, d in servers]
            # a native sidecar (an init container that restarts Always) listens for its pod too
            ports = {p.get("containerPort") for _f, d in servers
                     for c in list(_pod_spec(d).get("containers") or ())
                     + [i for i in _pod_spec(d).get("initContainers") or () if i.get("restartPolicy") == "Always"]
                     for p in c.get("ports") or ()}
            mine = []
            for pname, pool in pools.items():
                sel = (((pool.get("spec") or {}).get("selector") or {}).get("matchLabels")) or {}
                if sel and pod_labels and all(all(lab.get(k) == v for k, v in sel.items()) for lab in pod_labels):
                    mine.append(pname)
            where = f"routing: {site}: service {wname}"
            if any(_vision(w) for w, _p in ctx.placements(site, "kubernetes", "inference") if w.name == wname):
                out += _check_triton_routing(where, ctx, site, servers, routes, k8s_services, gateways)
                continue
            if len(mine) != 1:
                out.append(f"{where}: {len(mine)} InferencePools select all of its server pods, expected one")
                continue
            pname = mine[0]
            spec = pools[pname].get("spec") or {}
            sel = (spec.get("selector") or {}).get("matchLabels") or {}
            for f, d in deps:
                lab = (((d.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
                if (f, d) not in servers and all(lab.get(k) == v for k, v in sel.items()):
                    out.append(f"{where}: InferencePool {pname} also selects the pods of {f}")
            for f, lws, lab in workers:
                if sel and all(lab.get(k) == v for k, v in sel.items()):
                    out.append(f"{where}: InferencePool {pname} selects the headless worker pods of LeaderWorkerSet "
                               f"{lws} ({f}), which serve no requests")
            targets = {t.get("number") for t in spec.get("targetPorts") or ()}
            if not targets or not targets <= ports:
                out.append(f"{where}: InferencePool {pname} targets ports {sorted(targets)}, its servers listen on "
                           f"{sorted(p for p in ports if p is not None)}")
            ref = spec.get("endpointPickerRef") or {}
            epp = k8s_services.get(ref.get("name"))
            if epp is None:
                out.append(f"{where}: InferencePool {pname}'s endpoint picker {ref.get('name')} is no Service in "
                           f"kubernetes/{site}/")
            else:
                epp_ports = {p.get("port") for p in (epp.get("spec") or {}).get("ports") or ()}
                if (ref.get("port") or {}).get("number") not in epp_ports:
                    out.append(f"{where}: InferencePool {pname} calls its endpoint picker on port "
                               f"{(ref.get('port') or {}).get('number')}, Service {ref.get('name')} has {sorted(epp_ports)}")
                esel = (epp.get("spec") or {}).get("selector") or {}
                if not any(all(((((d.get("spec") or {}).get("template") or {}).get("metadata") or {})
                                .get("labels") or {}).get(k) == v for k, v in esel.items())
                           for _f, d in ctx.k8s_kind(site, "Deployment")) or not esel:
                    out.append(f"{where}: the endpoint picker's Service {ref.get('name')} selects no Deployment's pods")
            out += _check_pd_routing(where, ctx, site, wname, servers, pod_labels, ref.get("name"))
            routed = [r for r in routes
                      if any(b.get("kind") == "InferencePool" and b.get("name") == pname
                             for rule in (r.get("spec") or {}).get("rules") or () for b in rule.get("backendRefs") or ())]
            if not routed:
                out.append(f"{where}: no HTTPRoute sends requests to InferencePool {pname}")
            for r in routed:
                parents = {(p.get("kind", "Gateway"), p.get("name")) for p in (r.get("spec") or {}).get("parentRefs") or ()}
                if not any(k == "Gateway" and n in gateways for k, n in parents):
                    out.append(f"{where}: HTTPRoute {(r.get('metadata') or {}).get('name')} hangs from "
                               f"{sorted(n for _k, n in parents)}, no Gateway kubernetes/{site}/ creates")
    return out


def _check_triton_routing(where: str, ctx: Context, site: str, servers: list, routes: list, k8s_services: dict,
                          gateways: set) -> list[str]:
    """A vision service's Triton servers are routed without an InferencePool: every server
    Deployment is reached by an HTTPRoute from a Gateway the folder creates, through a Service that
    selects its pods, on a port that Service has."""
    out: list[str] = []
    backends = [(r, b) for r in routes for rule in (r.get("spec") or {}).get("rules") or ()
                for b in rule.get("backendRefs") or () if b.get("kind", "Service") == "Service"]
    for f, d in servers:
        labels = _pod_labels(d)
        reached = []
        for r, b in backends:
            svc = k8s_services.get(b.get("name"))
            if svc is None:
                continue
            sel = (svc.get("spec") or {}).get("selector") or {}
            ports = {pt.get("port") for pt in (svc.get("spec") or {}).get("ports") or ()}
            if sel and all(labels.get(k) == v for k, v in sel.items()) and b.get("port") in ports:
                reached.append(r)
        name = (d.get("metadata") or {}).get("name")
        if not reached:
            out.append(f"{where}: no HTTPRoute sends requests to a Service of {f}'s Triton servers ({name}) on a port "
                       "the Service has")
        for r in reached:
            parents = {(pt.get("kind", "Gateway"), pt.get("name")) for pt in (r.get("spec") or {}).get("parentRefs") or ()}
            if not any(k == "Gateway" and n in gateways for k, n in parents):
                out.append(f"{where}: HTTPRoute {(r.get('metadata') or {}).get('name')} hangs from "
                           f"{sorted(n for _k, n in parents)}, no Gateway kubernetes/{site}/ creates")
    return out


PD_PLUGINS = {"pd-profile-handler", "prefill-filter", "decode-filter"}


def _check_pd_routing(where: str, ctx: Context, site: str, wname: str, servers: list, pod_labels: list,
                      picker: str | None) -> list[str]:
    """A service planned disaggregated at the site: its server pods' roles are ones the picker
    knows, and the pool's endpoint picker runs a prefill and a decode profile (pd-profile-handler with the
    prefill and decode filters), read from the ConfigMap the picker's Deployment mounts."""
    pd = any(getattr(p, "disaggregation", None) is not None and p.replicas > 0
             for w, p in ctx.placements(site, "kubernetes", "inference") if w.name == wname)
    if not pd:
        return []
    out = []
    # a colocated placement's pods beside them carry no role: the decode filter passes them, and
    # with no routing sidecar they serve the whole request (llm-d's decode-filter, allowsNoLabel)
    odd = [f for (f, _d), lab in zip(servers, pod_labels) if lab.get(ROLE_LABEL, "both") not in PD_ROLES + ("both",)]
    if odd:
        out.append(f"{where}: the server pods of {', '.join(odd)} carry a {ROLE_LABEL} the picker's filters do not know")
    deps = [d for _f, d in ctx.k8s_kind(site, "Deployment") if (d.get("metadata") or {}).get("name") == picker]
    maps = {v.get("configMap", {}).get("name") for d in deps for v in _pod_spec(d).get("volumes") or ()}
    configs = []
    for _f, cm in ctx.k8s_kind(site, "ConfigMap"):
        if (cm.get("metadata") or {}).get("name") in maps:
            for text in ((cm.get("data") or {}).values()):
                try:
                    doc = yaml.safe_load(text)
                except yaml.YAMLError:
                    continue
                if isinstance(doc, dict) and doc.get("kind") == "EndpointPickerConfig":
                    configs.append(doc)
    ok = any(PD_PLUGINS <= {p.get("type") for p in c.get("plugins") or ()}
             and {"prefill", "decode"} <= {s.get("name") for s in c.get("schedulingProfiles") or ()} for c in configs)
    if not ok:
        out.append(f"{where}: planned disaggregated, but its endpoint picker {picker} runs no prefill and decode "
                   f"profiles ({', '.join(sorted(PD_PLUGINS))})")
    return out


def check_launchers(ctx: Context) -> list[str]:
    """Each training job's launcher runs the plan's layout: torchrun's nodes x processes per node
    are the placement's GPUs, and the degrees the training script is told are the plan's, with
    tensor x pipeline x context x data = GPUs. Experts fold over the tensor x context x data ranks,
    whole on each (Megatron-Core's parallel folding): the expert degree divides tensor x context x data, and a launcher
    with expert parallelism says expert tensor parallel 1. The recompute it is told is the one the
    memory was sized for."""
    out: list[str] = []
    for w in ctx.plan.workloads:
        if w.kind != "training":
            continue
        lay = w.layout
        want = {"tensor": lay.tp, "pipeline": lay.pp, "context": getattr(lay, "cp", 1), "expert": lay.ep,
                "data": lay.dp}
        gpus = w.placements[0].gpus if w.placements else w.gpus
        if lay.tp * lay.pp * want["context"] * lay.dp != gpus:
            out.append(f"launch: plan.json: {w.name}'s layout tensor {lay.tp} x pipeline {lay.pp} x context "
                       f"{want['context']} x data {lay.dp} is not its {gpus} GPUs")
        fold = lay.tp * getattr(lay, "cp", 1) * lay.dp
        if fold % max(1, lay.ep):
            out.append(f"launch: plan.json: {w.name}'s expert degree {lay.ep} does not divide its tensor x context x "
                       f"data degree {fold}")
        recompute = getattr(lay, "recompute", "selective")
        for p in w.placements:
            texts = []
            if orchestrator_of(w) == "slurm":
                rel = f"slurm/{p.site}/jobs/{w.name}.sbatch"
                text = ctx.text(rel)
                if text is not None:
                    body = text.replace("\\\n", " ")
                    line = next((ln for ln in body.splitlines() if "torchrun" in ln and not ln.lstrip().startswith("#")), "")
                    texts.append((rel, _flags(shlex.split(line)), shlex.split(line)))
            else:
                for f, d in ctx.k8s_kind(p.site, "JobSet"):
                    if _match_workload((d.get("metadata") or {}).get("name", ""), _labels(d), {w.name}):
                        for pod in _jobset_pods(d)[:1]:
                            for c in pod.get("containers") or ():
                                texts.append((f, _flags(list(c.get("args") or ())), list(c.get("args") or ())))
            if not texts:
                continue            # check_slurm / check_kubernetes name a missing job
            for rel, flags, tokens in texts:
                where = f"launch: {p.site}: {rel}: {w.name}"
                nodes, per = _as_int(flags.get("nnodes")), _as_int(flags.get("nproc-per-node"))
                if nodes is not None and per is not None and nodes * per != p.gpus:
                    out.append(f"{where}: torchrun starts {nodes} x {per} = {nodes * per} ranks, the placement "
                               f"holds {p.gpus} GPUs")
                told = {k: _as_int(flags.get(f"{k}-parallel-size", "1")) for k in LAUNCHER_DEGREES}
                for k in LAUNCHER_DEGREES:
                    if told[k] != want[k]:
                        out.append(f"{where}: --{k}-parallel-size={flags.get(f'{k}-parallel-size', '1 (absent)')}, "
                                   f"the plan's layout has {want[k]}")
                granularity = "full" if recompute == "full" else "selective"
                if flags.get("recompute-granularity") != granularity:
                    out.append(f"{where}: --recompute-granularity={flags.get('recompute-granularity', '(absent)')}, "
                               f"the plan sized its memory for {recompute} recompute")
                modules = _list_flag(tokens, "--recompute-modules")
                if (recompute == "moe") != ("moe" in modules):
                    out.append(f"{where}: --recompute-modules {' '.join(modules) or '(absent)'}, the plan sized "
                               f"its memory for {recompute} recompute")
                if lay.ep > 1 and flags.get("expert-tensor-parallel-size") != "1":
                    out.append(f"{where}: experts are whole on each of its {lay.ep} expert ranks, but the launcher "
                               f"does not say --expert-tensor-parallel-size=1")
                ranks = told["tensor"] * told["pipeline"] * told["context"] * told["data"] \
                    if None not in told.values() else None
                if ranks != p.gpus:
                    out.append(f"{where}: tensor x pipeline x context x data = {ranks} ranks on {p.gpus} GPUs")
    return out


CHECKS = (check_slurm, check_capacity, check_schedule, check_kubernetes, check_terraform, check_bom,
          check_references, check_serving, check_routing, check_launchers)


def check(out_dir: str | Path, catalog: Any = None) -> list[str]:
    """Every violation of docs/artifacts.md in the output folder `out_dir` (plan.json and the
    files rendered beside it), one line each; empty when the files implement the plan.
    `catalog`: a Catalog, a folder of catalog data files, or None (the shipped data files)."""
    ctx = Context(Path(out_dir), hardware(catalog))
    found: list[str] = []
    for fn in CHECKS:
        try:
            found += fn(ctx)
        except Exception as exc:  # noqa: BLE001 - a file the checker cannot read is a finding
            found.append(f"files: {fn.__name__} could not read the files: {type(exc).__name__}: {exc}")
    found += ctx.problems
    return list(dict.fromkeys(found))


if __name__ == "__main__":       # python tests/coherence.py OUT_DIR...
    import sys

    status = 0
    for arg in sys.argv[1:]:
        problems = check(Path(arg))
        print(f"{arg}: {len(problems)} violation(s)")
        for line in problems:
            print("  " + line)
        status |= bool(problems)
    raise SystemExit(status)
