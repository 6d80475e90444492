"""Slurm per site: slurm/<site>/{slurm.conf,gres.conf,topology.conf,cgroup.conf,jobs/*.sbatch}."""

from __future__ import annotations

from compiler.catalog.model import Catalog
from compiler.render.environment import render_template
from compiler.render.views import CLOUD_LEAF_NODES, SiteView, topology_switches

CONFIG_FILES = ("slurm.conf", "gres.conf", "topology.conf", "cgroup.conf")


def leaf_nodes(site: SiteView, catalog: Catalog) -> int:
    """Nodes per leaf: half the radix of the site's fabric (on-prem), a fixed block in clouds."""
    radixes = [catalog.fabrics[p.fabric].switch_radix for p in site.slurm_pools
               if p.fabric in catalog.fabrics]
    return max(1, min(radixes) // 2) if radixes else CLOUD_LEAF_NODES


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    switches = topology_switches(site.slurm_pools, leaf_nodes(site, catalog))
    out = {
        f"slurm/{site.name}/{name}": render_template(f"slurm/{name}.j2", site=site,
                                                     switches=switches)
        for name in CONFIG_FILES
    }
    for job in site.training_slurm:
        out[f"slurm/{site.name}/jobs/{job.name}.sbatch"] = render_template(
            "slurm/job.sbatch.j2", site=site, job=job)
    return out
