"""Policy: placement, allowed GPUs, residency, pins, spot and the pricings each site offers."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, is_cloud


def used_holdings(p):
    return [h for h in p.holdings if any(h.monthly_nodes) or any(x > 0 for x in h.monthly_node_hours)]


def check_policy(ctx: Context) -> Iterator[Finding]:
    pol = ctx.spec.policy
    for pl in ctx.placed:
        w, p, c = pl.workload, pl.placement, pl.cand
        site = ctx.sites.get(c.site)
        where = f"{w.name} at {p.site}/{p.instance}"
        if site is None:
            yield Finding(codes.PLACEMENT_POLICY, f"{where}: the spec has no site {c.site}", w.path)
            continue
        if pol.placement != "hybrid" and site.type != pol.placement:
            yield Finding(codes.PLACEMENT_POLICY,
                          f"{where}: policy.placement is {pol.placement}, {c.site} is {site.type}",
                          "$.policy.placement")
        hw = ctx.hardware(site, c.instance)
        gpu = (hw.gpu if hw else None) or c.gpu
        if pol.allowed_gpus is not None and (c.gpu not in pol.allowed_gpus or gpu not in pol.allowed_gpus):
            yield Finding(codes.GPU_NOT_ALLOWED,
                          f"{where} runs on {gpu}, which is not in policy.allowed_gpus "
                          f"({', '.join(pol.allowed_gpus)})", "$.policy.allowed_gpus")
        if w.sites and c.site not in w.sites:
            yield Finding(codes.RESIDENCY, f"{where}: {w.name} may only run at {', '.join(w.sites)}",
                          f"{w.path}.sites")
        yield from _pin(ctx, pl, site, gpu, where)
        yield from _pricings(ctx, pl, site, where)


def _pin(ctx: Context, pl, site, gpu: str, where: str) -> Iterator[Finding]:
    w, p, c = pl.workload, pl.placement, pl.cand
    pin = w.pin
    if pin is None:
        return
    broken = []
    if pin.gpu and gpu != pin.gpu:
        broken.append(f"gpu {pin.gpu} (runs on {gpu})")
    if pin.gpus and c.gpus != pin.gpus:
        what = "GPUs per replica" if c.kind == "inference" else "GPUs"
        broken.append(f"gpus {pin.gpus} (runs on {c.gpus} {what})")
    if pin.site and c.site != pin.site:
        broken.append(f"site {pin.site}")
    if pin.instance and c.instance != pin.instance:
        broken.append(f"instance {pin.instance}")
    if pin.pricing:
        other = sorted({h.pricing for h in used_holdings(p) if h.pricing != pin.pricing})
        if other:
            broken.append(f"pricing {pin.pricing} (holds {', '.join(other)} nodes)")
        elif (pin.pricing == "spot") != c.spot:
            broken.append(f"pricing {pin.pricing} (the candidate is {'spot' if c.spot else 'not spot'})")
    if broken:
        yield Finding(codes.PIN, f"{where} ignores its pin: {'; '.join(broken)}", f"{w.path}.pin")


def _pricings(ctx: Context, pl, site, where: str) -> Iterator[Finding]:
    w, p, c = pl.workload, pl.placement, pl.cand
    offered = rules.offered_pricings(site)
    held = {h.pricing for h in used_holdings(p)}
    for pricing in sorted(held - set(offered)):
        if pricing == "spot":
            continue      # said below, in spot's own terms
        yield Finding(codes.PRICING_NOT_OFFERED,
                      f"{where} holds {pricing} nodes; {site.name} offers {', '.join(offered)}",
                      rules.pricing_path(site))
    spot = "spot" in held or c.spot
    if spot:
        why = []
        if not is_cloud(site) or "spot" not in site.pricing:
            why.append(f"{site.name} does not offer spot")
        if c.kind != "training" or not getattr(w, "interruptible", False):
            why.append(f"{w.name} is not interruptible")
        if why:
            yield Finding(codes.SPOT, f"{where} runs on spot, but {' and '.join(why)}", w.path)
        elif held - {"spot"} or not c.spot:
            yield Finding(codes.SPOT, f"{where}: a {'spot' if c.spot else 'non-spot'} candidate holds "
                          f"{', '.join(sorted(held))} nodes", w.path)
