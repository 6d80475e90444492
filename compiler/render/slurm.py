"""Slurm per site: slurm/<site>/{slurm.conf,gres.conf,topology.conf,cgroup.conf,jobs/*.sbatch},
and resume.sh / suspend.sh where cloud capacity comes and goes (State=CLOUD nodes).

One partition per scheduling domain (site, instance) holds every Slurm node the plan holds
there, whatever its pricing; each node's Feature is its pricing, so a job asks for the
pricings its placement holds with --constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.catalog.model import Catalog
from compiler.render.common import CLOUD_LEAF_NODES, NodeShape, hostlist
from compiler.render.domains import Block, Domain
from compiler.render.environment import render_template
from compiler.render.site import SiteView

CONFIG_FILES = ("slurm.conf", "gres.conf", "topology.conf", "cgroup.conf")
POWER_PROGRAMS = ("resume.sh", "suspend.sh")
PROGRAM_DIR = "/etc/slurm"


@dataclass(frozen=True)
class NodeSet:
    """One NodeName line: Slurm's nodes of one block, all static or all cloud."""

    domain: Domain
    block: Block
    first: int
    last: int
    cloud: bool                   # State=CLOUD: started by ResumeProgram, stopped when idle

    @property
    def shape(self) -> NodeShape:
        return self.domain.shape

    @property
    def hostlist(self) -> str:
        return self.block.names(self.first, self.last)

    @property
    def state(self) -> str:
        return "CLOUD" if self.cloud else "UNKNOWN"


@dataclass(frozen=True)
class Partition:
    name: str
    node_sets: tuple[NodeSet, ...]

    @property
    def nodes(self) -> str:
        return ",".join(s.hostlist for s in self.node_sets)


@dataclass(frozen=True)
class Handover:
    hostlist: str
    note: str


@dataclass(frozen=True)
class Switch:
    name: str
    children: str                 # Slurm hostlist of nodes (leaf) or switches (spine)
    is_leaf: bool


@dataclass(frozen=True)
class SlurmSite:
    site: SiteView
    partitions: tuple[Partition, ...]
    switches: tuple[Switch, ...]
    handovers: tuple[Handover, ...]
    program_dir: str = PROGRAM_DIR

    @property
    def node_sets(self) -> tuple[NodeSet, ...]:
        return tuple(s for p in self.partitions for s in p.node_sets)

    @property
    def cloud_sets(self) -> tuple[NodeSet, ...]:
        return tuple(s for s in self.node_sets if s.cloud)

    @property
    def static_nodes(self) -> str:
        return ",".join(s.hostlist for s in self.node_sets if not s.cloud)

    @property
    def power_saving(self) -> bool:
        return bool(self.cloud_sets)


def handovers(site: SiteView) -> tuple[Handover, ...]:
    """Static Slurm nodes that Kubernetes holds in some months: which, and when."""
    cal = site.calendar

    def when(months) -> str:
        if cal.dated:
            return cal.runs(months) or "no month"
        return f"months {cal.runs(months) or '-'}"

    out = []
    for d in site.slurm_domains:
        for b in d.blocks:
            lo, hi = b.handover
            if not lo or lo > hi:
                continue
            for i in range(lo, hi + 1):
                slurm, k8s = b.months_held(i, "slurm"), b.months_held(i, "kubernetes")
                out.append(Handover(b.names(i, i), f"Slurm's in {when(slurm)}, Kubernetes' in {when(k8s)}"))
    return tuple(out)


def slurm_site(site: SiteView, catalog: Catalog) -> SlurmSite:
    partitions = []
    for d in site.slurm_domains:
        sets = tuple(NodeSet(d, b, b.slurm.first, b.slurm.last, cloud=b.slurm.elastic)
                     for b in d.blocks_for("slurm"))
        partitions.append(Partition(d.name, sets))
    parts = tuple(partitions)
    return SlurmSite(site=site, partitions=parts,
                     switches=topology_switches(parts, leaf_nodes(site, catalog)),
                     handovers=handovers(site))


def leaf_nodes(site: SiteView, catalog: Catalog) -> int:
    """Nodes per leaf: half the radix of the site's fabric (on-prem), a fixed block in clouds."""
    radixes = [catalog.fabrics[d.fabric].switch_radix for d in site.slurm_domains
               if d.fabric in catalog.fabrics]
    return max(1, min(radixes) // 2) if radixes else CLOUD_LEAF_NODES


def topology_switches(partitions: tuple[Partition, ...], leaf_nodes: int) -> tuple[Switch, ...]:
    """Slurm topology.conf switches: leaves of `leaf_nodes` nodes per node set, one spine above."""
    leaves: list[str] = []
    for part in partitions:
        for s in part.node_sets:
            for start in range(s.first, s.last + 1, leaf_nodes):
                end = min(start + leaf_nodes - 1, s.last)
                leaves.append(s.block.names(start, end))
    digits = max(2, len(str(len(leaves))))
    named = tuple(Switch(name=f"leaf{i:0{digits}d}", children=c, is_leaf=True)
                  for i, c in enumerate(leaves, start=1))
    if len(named) <= 1:
        return named
    spine = Switch(name="spine", children=hostlist("leaf", 1, len(named), digits), is_leaf=False)
    return named + (spine,)


def render_site(view: SlurmSite) -> dict[str, str]:
    site = view.site
    base = f"slurm/{site.name}"
    out = {f"{base}/{name}": render_template(f"slurm/{name}.j2", site=site, slurm=view,
                                            switches=view.switches)
           for name in CONFIG_FILES}
    if view.power_saving:
        for name in POWER_PROGRAMS:
            out[f"{base}/{name}"] = render_template(f"slurm/{name}.j2", site=site, slurm=view)
    for job in site.training_slurm:
        out[f"{base}/jobs/{job.name}.sbatch"] = render_template("slurm/job.sbatch.j2", site=site, job=job)
        if job.cron:
            out[f"{base}/jobs/{job.name}.scrontab"] = render_template("slurm/job.scrontab.j2", site=site, job=job)
    return out
