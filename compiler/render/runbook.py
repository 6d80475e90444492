"""RUNBOOK.md: how to apply the output folder, step by step, from the views the files were
rendered from (SiteFiles: render() builds each site's once and hands it to the targets and here;
nothing here reads a rendered file back).

For each site, in the order they must be applied: the Terraform folder (the variables it needs:
those of TerraformSite.variables without a default that no month file sets; a state backend;
the ids of the reservations held already, which it imports; how many resources its plan adds or
imports: TerraformSite.resources counted with month 0's file), the bill of materials on-prem,
Slurm's configuration and jobs, the Kubernetes manifests in file order, then the monthly
schedule (a CronJob where the schedule only touches Kubernetes, and the CI workflow
ci/schedule.yml for every site). Before any of it: the reservations the plan priced,
which are bought outside Terraform, and what the manifests need installed (Kueue and JobSet, the
metrics adapter an HPA on a custom metric reads, the storage class driver). After each step, a
command and what it must show.

A re-plan (a baseline plan given) is applied over what the baseline deployed: the runbook opens
with what changes against it (changes.py) and the held commitments that end in the horizon, and
a site whose pools and workloads all stay as they are gets no step but its schedule; a site that
changes gets its steps without what the baseline's deploy did once (variables, state backend,
tools, the jobs that run as before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from compiler.catalog.model import Catalog
from compiler.plan import UNDATED, Calendar, Held, Plan
from compiler.render.changes import Changes
from compiler.render.common import POOL_LABEL, PRICING_LABEL
from compiler.render.domains import TERMS
from compiler.render.environment import Md, k8s_name, md_code, md_text, render_template
from compiler.render.kubernetes import HPA_METRIC, PREFILL_HPA_METRIC, KubernetesSite
from compiler.render.schedule import CRON, ScheduleSite, configmap_name
from compiler.render.site import LWS_MANIFESTS, SiteView, service_routes, site_view
from compiler.render.slurm import CONFIG_FILES, POWER_PROGRAMS, PROGRAM_DIR, SlurmSite, slurm_site
from compiler.render.terraform import FILES as TERRAFORM_FILES
from compiler.render.terraform import TerraformSite, TerraformVariable

WORKFLOW = "ci/schedule.yml"
# The Prometheus series behind each custom metric the HPAs read (vLLM exports them with a ':'
# that a custom metrics API name cannot hold; the adapter renames them).
SERIES = {HPA_METRIC: "vllm:num_requests_running", PREFILL_HPA_METRIC: "vllm:num_requests_waiting"}
# What a Terraform capacity reservation is priced at unless a discount covers it, and the
# discount to buy so that it is priced as the plan priced it.
DISCOUNTS = {"aws": "EC2 Reserved Instances (or a Savings Plan) for the instance type and region",
             "gcp": "a resource-based committed use discount for the machine type and region",
             "azure": "an Azure Reservation for the VM size and region"}
# A Terraform state backend per provider: the block for backend.tf and the keys to pass to
# `terraform init -backend-config=backend.hcl` (partial configuration, so no secret is written).
BACKENDS = {
    "aws": ("s3", (("bucket", "my-terraform-state"), ("key", "{plan}/{site}/terraform.tfstate"),
                   ("region", "{region}"), ("use_lockfile", True))),
    "gcp": ("gcs", (("bucket", "my-terraform-state"), ("prefix", "{plan}/{site}"))),
    "azure": ("azurerm", (("resource_group_name", "terraform-state"), ("storage_account_name", "mytfstate"),
                          ("container_name", "tfstate"), ("key", "{plan}/{site}.tfstate"))),
}
# The routing layer's prerequisites (29-gateway.yaml, 31-route-<service>.yaml): the CRDs of the
# Gateway API (v1.4.0, standard channel) and of its inference extension (v1.2.0: InferencePool
# and the objects its endpoint picker reads), as those projects' release documents install them.
GATEWAY_API_CRDS = "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.4.0/standard-install.yaml"
INFERENCE_CRDS = ("https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
                  "v1.2.0/manifests.yaml")
ROUTING_CRDS = ("gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io",
                "inferencepools.inference.networking.k8s.io")
# What installs a Gateway's class where it is not built into the cluster (the class's name ->
# the command): Istio 1.28 or later with its inference extension support switched on.
GATEWAY_INSTALL = {"istio": "istioctl install -y --set values.pilot.env.ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true"}
# The object kinds of a service's routing file, by the names the file gives them (fully
# qualified where the inference extension's CRDs hold two kinds of the same name).
ROUTE_KINDS = "httproutes.gateway.networking.k8s.io,inferencepools.inference.networking.k8s.io"
PICKER_KINDS = "deployment,service,configmap,role,rolebinding,serviceaccount"
CLUSTER_TOOLS = {"aws": "aws eks update-kubeconfig --name <eks_cluster_name> --region {region}",
                 "gcp": "gcloud container clusters get-credentials <gke_cluster> --region {region}",
                 "azure": "az aks get-credentials --resource-group <group> --name <cluster>"}


@dataclass(frozen=True)
class SiteFiles:
    """A site's views as its files were rendered from them: render() builds each once, hands it
    to the target's renderer and here. The runbook reads these, never the files."""

    view: SiteView
    terraform: TerraformSite | None = None      # a cloud site's terraform/<site>/
    slurm: SlurmSite | None = None              # slurm/<site>/, where Slurm runs
    kubernetes: KubernetesSite | None = None    # kubernetes/<site>/, where Kubernetes runs
    schedule: ScheduleSite | None = None        # schedule/<site>.*

    @property
    def bom(self) -> str:
        """onprem/<site>/bom.csv, written for every on-prem site ("" in a cloud)."""
        return "" if self.view.cloud else f"onprem/{self.view.name}/bom.csv"


@dataclass(frozen=True)
class BackendSetting:
    key: str
    value: str                    # as HCL (quoted string or bare bool)


@dataclass(frozen=True)
class MonthStep:
    """A later month's Terraform step: the month file the schedule applies, and what it changes."""

    month: int
    file: str                         # relative to the site's folder: months/NNN.tfvars
    changes: tuple[str, ...]


# The id each provider's held_reservation_ids takes (variables.tf checks its form: terraform.py's
# HELD_ID_FORMS), and how many resources one import adopts (Azure: the reservation and its group).
HELD_IDS = {"aws": ("an EC2 capacity reservation id", "cr-0123456789abcdef0", 1),
            "gcp": ("the reservation's path", "projects/PROJECT/zones/ZONE/reservations/NAME", 1),
            "azure": ("the capacity reservation's resource id",
                      "/subscriptions/SUBSCRIPTION/resourceGroups/GROUP/providers/Microsoft.Compute/"
                      "capacityReservationGroups/RESERVATION_GROUP/capacityReservations/NAME", 2)}


@dataclass(frozen=True)
class ImportedReservation:
    """A reservation held already (bought before the plan) that the site's Terraform imports: its
    key in `held_reservation_ids`, and what it is."""

    key: str                          # the reservation's Terraform label, the variable's map key
    instance: str
    nodes: int                        # of its nodes, those held already
    total: int                        # the reservation's nodes over the plan (held and bought)


@dataclass(frozen=True)
class TerraformStep:
    dir: str
    files: tuple[str, ...]
    required: tuple[TerraformVariable, ...]   # variables without a default that the operator sets
    resources: int                    # what `terraform plan` adds on a first apply (month 0)
    backend: str                      # s3 | gcs | azurerm
    backend_settings: tuple[BackendSetting, ...]
    first: str = ""                   # months/NNN.tfvars of month 0 ("" : the folder has none)
    month_vars: tuple[str, ...] = ()  # the variables the month files set
    later: tuple[MonthStep, ...] = ()  # the months after 0 in which Terraform changes
    held: tuple[ImportedReservation, ...] = ()   # reservations main.tf imports: their ids to set first
    held_id: str = ""                 # what an id of held_reservation_ids is, on this provider
    held_example: str = ""            # one such id, as an example
    imports: int = 0                  # resources a first `terraform plan` imports rather than adds


@dataclass(frozen=True)
class PartitionCheck:
    name: str
    nodes: int


@dataclass(frozen=True)
class SlurmJob:
    path: str
    name: str
    nodes: int
    first_month: int              # when to submit it
    months: str                   # the months it runs
    when: str = ""                # the same in running text: "months 0-1"; dated "2027-01..2027-02"
    # a recurring job: its scrontab file, where the entry runs the script from, and its runs
    scrontab: str = ""
    script_path: str = ""
    period: str = ""
    runs: int = 0


@dataclass(frozen=True)
class SlurmStep:
    dir: str
    config: tuple[str, ...]           # files to /etc/slurm
    programs: tuple[str, ...]         # Resume/Suspend programs to PROGRAM_DIR
    program_dir: str
    partitions: tuple[PartitionCheck, ...]
    jobs: tuple[SlurmJob, ...]
    kept_jobs: tuple[str, ...] = ()   # a re-plan: jobs that run as the baseline placed them, and when


@dataclass(frozen=True)
class NodeCheck:
    selector: str                     # kubectl -l
    low: int
    high: int                         # low == high: exactly
    first_month: int = 0              # the first month it has nodes (low == high == 0 before)


@dataclass(frozen=True)
class ServiceCheck:
    name: str
    replicas: int                     # month 0
    unit: str = ""                    # a disaggregated service's role: what its servers are part of
    kind: str = "deployment"          # the object kubectl gets: leaderworkerset for a replica over nodes
    nodes: int = 1                    # the nodes (pods) a replica spans


@dataclass(frozen=True)
class Routing:
    """What a site's routing layer (29-gateway.yaml and the 31-route-<service>.yaml files) needs
    installed before its first apply: the CRDs its objects are of, and the Gateway's class."""

    gateway_class: str
    provided_by: str                  # what implements the class
    install: str                      # the command that installs it ("" : built into the cluster)
    managed_crds: bool                # the provider's cluster installs the Gateway API CRDs itself
    gateway_api: str = GATEWAY_API_CRDS
    inference: str = INFERENCE_CRDS
    crds: tuple[str, ...] = ROUTING_CRDS


@dataclass(frozen=True)
class RouteRemoval:
    """A service's routing objects at a site (31-route-<service>.yaml), by the names the file
    gave them: the HTTPRoute and InferencePool, and the endpoint picker's objects."""

    pool: str
    picker: str


@dataclass(frozen=True)
class KubernetesStep:
    files: tuple[str, ...]            # in apply order
    namespace: str
    nodes: tuple[NodeCheck, ...]
    services: tuple[ServiceCheck, ...]
    kueue: bool                       # Kueue and JobSet must be installed first
    storage_driver: str               # what provides the claims' storage class ("" : none)
    credentials: str                  # the command that points kubectl at the cluster ("" on-prem)
    routing: Routing | None = None    # the site routes to its services: what to install first
    lws: bool = False                 # LeaderWorkerSet must be installed first (a replica over nodes)
    lws_manifests: str = LWS_MANIFESTS


@dataclass(frozen=True)
class ScheduleStep:
    script: str
    csv: str
    cronjob: str                      # "" where the schedule also drives Slurm (no CronJob)
    configmap: str
    namespace: str
    last_month: int
    handover: bool                    # nodes change hands between Slurm and Kubernetes
    terraform: bool = False           # months apply the site's Terraform month files


@dataclass(frozen=True)
class Removal:
    """A re-plan: what the baseline's files created at a site that this plan's files do not, by
    the names the baseline's files gave it (its Kubernetes objects are not deleted by applying
    this plan's files; its Slurm partitions leave with the new slurm.conf, but jobs may hold them;
    a Terraform folder this plan no longer writes is not applied by anyone)."""

    site: str
    namespace: str
    deployments: tuple[str, ...] = ()     # a serving layout: its Deployment, Service, HPA and PDB
    routes: tuple[RouteRemoval, ...] = ()  # a service's routing here (31-route-<service>.yaml)
    gateway: str = ""                     # the site's Gateway, once no service is routed here
    jobsets: tuple[str, ...] = ()         # a training job's JobSet
    recurring: tuple[str, ...] = ()       # a recurring job's CronJob (its launcher objects too)
    partitions: tuple[str, ...] = ()      # Slurm partitions the new slurm.conf lacks
    terraform: str = ""                   # the baseline's terraform/<site> this plan does not write
    in_plan: bool = True                  # the site is one of this plan's
    # the baseline's placements here on an instance it holds no pool of (a plan.json edited by
    # hand): the names its files gave them cannot be known, so they are named, not deleted
    unplaced: tuple[tuple[str, str], ...] = ()    # (workload, instance)
    groups: tuple[str, ...] = ()          # a serving layout over several nodes: its LeaderWorkerSet, ...
    # names whose serving object this plan keeps under the other kind (a Deployment become a
    # LeaderWorkerSet or back): only the old object goes, its Service, HPA and PDB are the plan's
    switched: tuple[str, ...] = ()

    @property
    def kubernetes(self) -> bool:
        return bool(self.deployments or self.groups or self.routes or self.gateway or self.jobsets or self.recurring)

    @property
    def checks(self) -> tuple[str, ...]:
        """The `kubectl -n <namespace> get ...` arguments that answer NotFound once it is deleted."""
        return (tuple(f"get deployment {d}" for d in self.deployments)
                + tuple(f"get leaderworkerset {g}" for g in self.groups)
                + tuple(f"get inferencepools.inference.networking.k8s.io {r.pool}" for r in self.routes)
                + tuple(f"get deployment {r.picker}" for r in self.routes)
                + ((f"get gateways.gateway.networking.k8s.io {self.gateway}",) if self.gateway else ())
                + tuple(f"get jobset {j}" for j in self.jobsets)
                + tuple(f"get cronjob {j}" for j in self.recurring))


@dataclass(frozen=True)
class SiteSteps:
    name: str
    where: str
    cloud: bool
    terraform: TerraformStep | None
    bom: str                          # onprem/<site>/bom.csv ("" : none)
    slurm: SlurmStep | None
    kubernetes: KubernetesStep | None
    schedule: ScheduleStep | None
    # A re-plan only: new (the baseline runs nothing here: every step), changed (the steps, less
    # what the baseline's deploy did once), deployed (nothing here changes: the schedule only).
    status: str = ""
    changes: tuple[str, ...] = ()     # what changes here, one line each
    removal: Removal | None = None    # what the baseline ran here and this plan drops


@dataclass(frozen=True)
class Purchase:
    site: str
    provider: str
    region: str
    instance: str
    nodes: int
    term: str                         # "1 year" | "3 years"
    first_month: int
    last_month: int                   # of the term (may run past the horizon)
    discount: str                     # what to buy
    months_after: int = 0             # of its months, those after the horizon (paid all the same)


@dataclass(frozen=True)
class BlockBuy:
    """A Capacity Block to buy (plan.CapacityBlock) as the provider's CLI asks for it: an AWS
    Capacity Block (of instances, or of whole UltraServers) or a GCP calendar-mode reservation."""
    workload: str
    site: str
    region: str
    instance: str
    counts: tuple[int, ...]           # instances of each block (the job's nodes split at the block limit;
                                      # an UltraServer's instances each, where blocks are UltraServers)
    days: int
    start: str                        # the earliest start, ISO 8601 (a placeholder where the plan is undated)
    latest_end: str                   # the latest end: the window's end, or start + days
    month: str                        # the month it starts, as the plan names months
    cost_usd: float
    provider: str = "aws"
    ultraserver: str = ""             # the UltraServer type each block is (AWS P6e-GB200), or ""
    end: str = ""                     # start + days (a GCP request states its end)
    latest_start: str = ""            # the latest start that still ends by the window's end
    name: str = ""                    # the request's name (GCP), one per block: NAME-1, NAME-2...


def _capacity_blocks(plan: Plan, catalog: Catalog | None = None) -> tuple[BlockBuy, ...]:
    """The plan's Capacity Blocks, each starting on the first day of its window's month."""
    import datetime as dt

    from compiler import unit_costs
    region = {s.name: s.region or "" for s in plan.sites}
    provider = {s.name: s.provider or "aws" for s in plan.sites}
    window = {w.name: w.inputs.value("window.deadline_days") for w in plan.workloads if w.inputs is not None}
    out = []
    for b in plan.capacity_blocks:
        where = provider.get(b.site, "aws")
        unit = unit_costs.capacity_block_ultraserver(catalog, where, b.instance) if catalog is not None else None
        if unit is not None:
            counts = (unit[1],) * b.blocks
        else:
            per = -(-b.nodes // b.blocks)
            counts = tuple(min(per, b.nodes - k * per) for k in range(b.blocks))
        span = max(b.days, int(-(-float(window.get(b.workload) or b.days) // 1)))
        if plan.calendar.dated:
            first = dt.date.fromisoformat(f"{plan.calendar.name(b.start_month)}-01")
            start, end = f"{first.isoformat()}T00:00:00Z", f"{(first + dt.timedelta(days=span)).isoformat()}T11:30:00Z"
            ends = f"{(first + dt.timedelta(days=b.days)).isoformat()}T00:00:00Z"
            latest = f"{(first + dt.timedelta(days=span - b.days)).isoformat()}T00:00:00Z"
        else:
            start, end = f"MONTH_{b.start_month}_START", f"MONTH_{b.start_month}_START_PLUS_{span}_DAYS"
            ends = f"MONTH_{b.start_month}_START_PLUS_{b.days}_DAYS"
            latest = f"MONTH_{b.start_month}_START_PLUS_{span - b.days}_DAYS"
        name = re.sub(r"[^a-z0-9-]+", "-", f"{b.workload}-{b.site}".lower()).strip("-")[:55]
        out.append(BlockBuy(b.workload, b.site, region.get(b.site, ""), b.instance, counts, b.days, start, end,
                            plan.calendar.name(b.start_month), b.cost_usd, where, unit[0] if unit else "",
                            ends, latest, name))
    return tuple(out)


@dataclass(frozen=True)
class MetricRule:
    metric: str                       # the name the HPA asks the custom metrics API for
    series: str                       # the server's Prometheus series it comes from
    services: tuple[str, ...]


@dataclass(frozen=True)
class Runbook:
    plan_name: str
    horizon_months: int
    sites: tuple[SiteSteps, ...]
    purchases: tuple[Purchase, ...]
    metrics: tuple[MetricRule, ...]   # custom metrics the HPAs read (an adapter must serve them)
    workflow: str                     # ci/schedule.yml ("" : no schedule to run)
    cron: str
    calendar: Calendar = UNDATED      # names the months (the spec's start)
    held: tuple[Held, ...] = ()       # commitments already bought: nothing to buy, their end to watch
    savings_plans: tuple = ()         # Savings Plans to buy (plan.SavingsPlanBought): no Terraform resource
    savings_plan_provider: str = "aws"   # whose they are (E222: a spec's plans are one provider's)
    capacity_blocks: tuple[BlockBuy, ...] = ()   # Capacity Blocks to buy before their jobs start
    changes: Changes | None = None    # a re-plan: what changes against the baseline
    removed_sites: tuple[Removal, ...] = ()   # a re-plan: the baseline's sites this plan has not
    edge: tuple = ()                  # the plan's edge sites (render/edge.py EdgeFleet): boxes per location


def _savings_plan_provider(plan: Plan) -> str:
    """The provider of the sites the plan's Savings Plans cover ("aws" where it buys none)."""
    provider = {s.name: s.provider for s in plan.sites}
    return next((provider.get(b.sites[0]) or "aws" for b in plan.savings_plans.bought if b.sites), "aws")


def _hcl_value(value: object) -> str:
    return "true" if value is True else f'"{value}"'


def _change_text(c, calendar: Calendar = UNDATED) -> str:
    if c.unit == "end":
        if calendar.dated:      # 0: the month file holds no term of it (no term ends in month 0)
            was = f" (was {calendar.name(c.before)})" if c.before else ""
            return f"{c.what} ends in {calendar.name(c.after) if c.after else 'no month: it holds no nodes'}{was}"
        return f"{c.what} ends in month {c.after} (was {c.before})"
    return f"{c.what}: {c.before} -> {c.after} nodes"


def _terraform(sf: SiteFiles) -> TerraformStep | None:
    tf, site = sf.terraform, sf.view
    if tf is None:
        return None
    base = f"terraform/{site.name}"
    backend, settings = BACKENDS.get(site.provider or "", BACKENDS["aws"])
    fill = {"plan": site.plan_name, "site": site.name, "region": site.region or ""}
    months = tf.months
    what, example, per_import = HELD_IDS.get(site.provider or "", HELD_IDS["aws"])
    held = tuple(ImportedReservation(r.id, r.block.instance, r.held_nodes, r.nodes) for r in tf.held)
    first = months[0].path if months else ""
    month_vars = months[0].variables if months else ()
    return TerraformStep(
        dir=base, files=tuple(sorted(TERRAFORM_FILES)),
        required=tuple(v for v in tf.variables if v.default is None and v.name not in month_vars),
        resources=tf.planned_resources, backend=backend,
        backend_settings=tuple(BackendSetting(k, _hcl_value(v.format(**fill) if isinstance(v, str) else v))
                               for k, v in settings),
        first=first, month_vars=month_vars,
        later=tuple(MonthStep(f.month, f.path, tuple(_change_text(c, site.calendar) for c in f.changes))
                    for f in months[1:]),
        held=held, held_id=what if held else "", held_example=example if held else "",
        imports=per_import * len(held))


def _slurm(plan: Plan, sf: SiteFiles) -> SlurmStep | None:
    """slurm/<site>/ as slurm.render_site writes it from the same view: every config file, the
    power-saving programs where nodes are started as needed, a script per job (and a scrontab
    entry per recurring one)."""
    view, site = sf.slurm, sf.view
    if view is None:
        return None
    base = f"slurm/{site.name}"
    starts = {w.name: w.start_month for w in plan.workloads}
    jobs = []
    for job in site.training_slurm:
        path = f"{base}/jobs/{job.name}.sbatch"
        plural = "s" if "-" in job.months or "," in job.months else ""
        when = job.months if site.calendar.dated else f"month{plural} {job.months}"
        cron = f"{base}/jobs/{job.name}.scrontab"
        jobs.append(SlurmJob(path, job.name, job.nodes, starts.get(job.name, 0), job.months, when,
                             *((cron, job.script_path, job.period, job.runs) if job.cron else ())))
    return SlurmStep(
        dir=base, config=CONFIG_FILES,
        programs=POWER_PROGRAMS if view.power_saving else (), program_dir=PROGRAM_DIR,
        partitions=tuple(PartitionCheck(p.name, sum(s.last - s.first + 1 for s in p.node_sets))
                         for p in view.partitions),
        jobs=tuple(jobs))


def _node_checks(sf: SiteFiles) -> tuple[NodeCheck, ...]:
    checks = []
    site = sf.view
    if sf.terraform is not None:
        horizon = site.horizon_months
        for p in sf.terraform.pools:
            if p.orchestrator == "kubernetes":
                n = p.month_nodes(0)
                first = next((m for m in range(horizon) if p.month_nodes(m)), 0)
                checks.append(NodeCheck(f"{POOL_LABEL}={p.domain.name},{PRICING_LABEL}={p.block.pricing}",
                                        n, n, first))
    else:
        for d in site.kubernetes_domains:
            for b in d.blocks_for("kubernetes"):
                n = b.kubernetes.count
                checks.append(NodeCheck(f"{POOL_LABEL}={d.name},{PRICING_LABEL}={b.pricing}", n, n))
    return tuple(checks)


def _metric_rules(sites: tuple[SiteFiles, ...]) -> tuple[MetricRule, ...]:
    """The custom metrics the services' HPAs scale on, each with the HPAs that read it."""
    hpas: dict[str, set[str]] = {}
    for s in sites:
        for a in s.kubernetes.autoscalers if s.kubernetes is not None else ():
            hpas.setdefault(a.metric, set()).add(a.name)
    return tuple(MetricRule(m, SERIES.get(m, m), tuple(sorted(h))) for m, h in sorted(hpas.items()))


def _kubernetes(sf: SiteFiles) -> KubernetesStep | None:
    k, site = sf.kubernetes, sf.view
    if k is None:
        return None
    driver = ""
    if site.models is not None:
        driver = f"{site.models.storage_class} ({site.models.driver})"
    elif site.storage is not None:
        driver = f"{site.storage.tier} (the tier's CSI driver)"
    credentials = CLUSTER_TOOLS.get(site.provider or "", "").format(region=site.region or "")
    routing = None
    if k.gateway:
        gw = site.gateway
        routing = Routing(gw.gateway_class, gw.provided_by, GATEWAY_INSTALL.get(gw.gateway_class, ""),
                          managed_crds=gw.gateway_class not in GATEWAY_INSTALL)
    return KubernetesStep(
        files=k.files, namespace=site.namespace, nodes=_node_checks(sf),
        services=tuple(ServiceCheck(s.object_name, s.initial_replicas, _unit(s), s.kind.lower(), s.nodes_per_replica)
                       for s in site.inference),
        kueue=k.kueue, storage_driver=driver, credentials=credentials,
        routing=routing, lws=k.lws)


def _unit(s) -> str:
    """'the prefill servers of rag-70b, which runs as 2 units of 4 prefill x tp4 + 1 decode x tp4';
    "" for a colocated service's Deployment."""
    if s.pd is None:
        return ""
    units = f"{s.pd.units} unit{'s' if s.pd.units != 1 else ''}"
    return f"the {s.role} servers of {s.name}, which runs as {units} of {s.pd.layout}"


def _schedule(sf: SiteFiles) -> ScheduleStep | None:
    sched, site = sf.schedule, sf.view
    if sched is None or not sched.script:
        return None
    return ScheduleStep(script=f"schedule/{site.name}.sh", csv=f"schedule/{site.name}.csv",
                        cronjob=f"schedule/{site.name}.cronjob.yaml" if sched.cronjob else "",
                        configmap=configmap_name(site), namespace=site.namespace,
                        last_month=site.horizon_months - 1, handover=bool(site.handovers),
                        terraform=sched.terraform)


def purchases(plan: Plan) -> tuple[Purchase, ...]:
    sites = {s.name: s for s in plan.sites}
    out = []
    for p in plan.pools:
        months = TERMS.get(p.pricing)
        if not months:
            continue
        s = sites.get(p.site)
        provider = (s.provider if s else "") or ""
        for r in p.reservations:
            # a term begun before the horizon is held (bought already): nothing to buy
            if r.nodes > 0 and r.start_month >= 0:
                out.append(Purchase(p.site, provider, (s.region if s else "") or "", p.instance, r.nodes,
                                    "1 year" if months == 12 else "3 years", r.start_month,
                                    r.start_month + months - 1,
                                    DISCOUNTS.get(provider, "the provider's reservation"),
                                    max(0, r.start_month + months - plan.horizon_months)))
    return tuple(sorted(out, key=lambda b: (b.first_month, b.site, b.instance, b.term)))


def _dropped_lines(r: Removal | None) -> tuple[str, ...]:
    """What a site's removal deletes, one line each (as the site's changes list it)."""
    if r is None:
        return ()
    return (tuple(f"delete Deployment {d} (a serving layout this plan dropped)" for d in r.deployments)
            + tuple(f"delete LeaderWorkerSet {g} (a serving layout this plan dropped)" for g in r.groups)
            + tuple(f"delete the routing of {p.pool} (InferencePool, HTTPRoute and endpoint picker "
                    f"{p.picker}: a service this plan no longer runs here)" for p in r.routes)
            + ((f"delete Gateway {r.gateway} (no service is routed here any more)",) if r.gateway else ())
            + tuple(f"delete JobSet {j} (a training job this plan runs elsewhere or not at all)"
                    for j in r.jobsets + r.recurring)
            + tuple(f"Slurm partition {p} ends" for p in r.partitions)
            + tuple(f"{w} on {i}: the baseline holds no pool of it here; find what it runs by hand"
                    for w, i in r.unplaced))


def _over_baseline(step: SiteSteps, changes: Changes, removal: Removal | None = None) -> SiteSteps:
    """A site's steps in a re-plan: a site the baseline runs nothing at keeps every step; one
    where nothing changes keeps only its schedule (this plan's months); one that changes keeps
    the steps that change something: hardware only where bought nodes change, and only the jobs
    that are new or moved (the others run as the baseline placed them)."""
    status = changes.site_status(step.name)
    dropped = _dropped_lines(removal)
    if status == "deployed" and dropped:
        status = "changed"            # the same pools, but a layout or job is gone: its objects go
    if status == "new":
        return replace(step, status=status, removal=removal)
    if status == "deployed":
        return replace(step, status=status, terraform=None, bom="", slurm=None, kubernetes=None)
    buys = any(p.site == step.name and p.pricing == "purchase" for p in changes.pools)
    slurm = step.slurm
    if slurm is not None:
        changed = changes.changed_workloads
        slurm = replace(slurm, jobs=tuple(j for j in slurm.jobs if j.name in changed),
                        kept_jobs=tuple(Md(f"`{md_code(j.name)}` ({md_text(changes.calendar.month(j.first_month))})")
                                        for j in slurm.jobs if j.name not in changed))
    return replace(step, status=status, changes=changes.site_lines(step.name) + dropped,
                   bom=step.bom if buys else "", slurm=slurm, removal=removal)


def _deployed(view: SiteView | None, catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """The objects a site's files create that a re-plan must delete by name once dropped: the
    names as the templates write them (templates/kubernetes, slurm.conf)."""
    if view is None:
        return {}
    kube = view.uses("kubernetes")
    routes = service_routes(view.inference) if kube else ()
    return {
        "deployments": tuple(sorted({k8s_name(s.object_name) for s in view.inference if not s.multi_node}))
        if kube else (),
        "groups": tuple(sorted({k8s_name(s.object_name) for s in view.inference if s.multi_node})) if kube else (),
        "routes": tuple(sorted({RouteRemoval(r.pool, r.picker) for r in routes}, key=lambda r: r.pool)),
        "gateway": (view.gateway.name,) if routes else (),
        "jobsets": tuple(sorted(j.dns_name for j in view.training_kubernetes if not j.cron)) if kube else (),
        "recurring": tuple(sorted(j.dns_name for j in view.training_kubernetes if j.cron)) if kube else (),
        "partitions": (tuple(sorted(p.name for p in slurm_site(view, catalog).partitions))
                       if view.uses("slurm") else ()),
        "terraform": (f"terraform/{view.name}",) if view.cloud else (),
    }


def _on_pools(plan: Plan) -> tuple[Plan, frozenset[tuple[str, str, str]]]:
    """The plan less the placements on an instance it holds no pool of at their site (a plan
    the compiler wrote has none; one edited by hand may), and those left out: (site, workload,
    instance). A site view is built from pools: it cannot name what such a placement ran."""
    pools = {(p.site, p.instance) for p in plan.pools}
    left = frozenset((p.site, w.name, p.instance) for w in plan.workloads for p in w.placements
                     if (p.site, p.instance) not in pools)
    if not left:
        return plan, left
    return replace(plan, workloads=tuple(
        replace(w, placements=tuple(p for p in w.placements if (p.site, p.instance) in pools))
        for w in plan.workloads)), left


def _runs(view: SiteView | None) -> set[str]:
    """The workloads a site's files run."""
    if view is None:
        return set()
    return ({s.name for s in view.inference} | {j.name for j in view.training_slurm}
            | {j.name for j in view.training_kubernetes})


def removals(baseline: Plan, catalog: Catalog, sites: tuple[SiteView, ...]) -> tuple[Removal, ...]:
    """Per site of the baseline, what its files created that this plan's do not (sites with
    nothing to remove left out). The baseline's names come from its own site views, built as its
    compile built them, so they are the names in the files it wrote. A baseline placement on no
    pool of the baseline's is named, not deleted, where this plan does not run its workload there."""
    now = {s.name: s for s in sites}
    baseline, unplaced = _on_pools(baseline)
    out = []
    for site in sorted(baseline.sites, key=lambda s: s.name):
        was_view = site_view(baseline, catalog, site)
        runs = _runs(now.get(site.name))
        lost = tuple(sorted({(w, i) for s, w, i in unplaced if s == site.name and w not in runs}))
        was, new = _deployed(was_view, catalog), _deployed(now.get(site.name), catalog)
        gone = {k: tuple(n for n in v if n not in new.get(k, ())) for k, v in was.items()}
        r = Removal(site.name, was_view.namespace, gone["deployments"], gone["routes"],
                    gone["gateway"][0] if gone["gateway"] else "", gone["jobsets"], gone["recurring"],
                    gone["partitions"], gone["terraform"][0] if gone["terraform"] else "",
                    in_plan=site.name in now, unplaced=lost, groups=gone["groups"],
                    switched=tuple(sorted(set(gone["deployments"]) & set(new.get("groups", ()))
                                          | set(gone["groups"]) & set(new.get("deployments", ())))))
        if r.kubernetes or r.partitions or r.terraform or r.unplaced:
            out.append(r)
    return tuple(out)


def build(plan: Plan, catalog: Catalog, sites: tuple[SiteFiles, ...],
          changes: Changes | None = None, baseline: Plan | None = None, edge: tuple = ()) -> Runbook:
    steps = tuple(SiteSteps(
        name=s.view.name, where=f"{s.view.provider} {s.view.region}" if s.view.cloud else "on-prem",
        cloud=s.view.cloud, terraform=_terraform(s), bom=s.bom, slurm=_slurm(plan, s),
        kubernetes=_kubernetes(s), schedule=_schedule(s)) for s in sites)
    gone = removals(baseline, catalog, tuple(s.view for s in sites)) if baseline is not None else ()
    here = {r.site: r for r in gone if r.in_plan}
    if changes is not None:
        steps = tuple(_over_baseline(step, changes, here.get(step.name)) for step in steps)
    return Runbook(
        plan_name=plan.spec_name, horizon_months=plan.horizon_months, sites=steps,
        purchases=purchases(plan), metrics=_metric_rules(sites),
        workflow=WORKFLOW if _workflow_jobs(sites) else "", cron=CRON, calendar=plan.calendar, held=plan.held,
        savings_plans=plan.savings_plans.bought, savings_plan_provider=_savings_plan_provider(plan),
        capacity_blocks=_capacity_blocks(plan, catalog),
        changes=changes, removed_sites=tuple(r for r in gone if not r.in_plan), edge=edge)



@dataclass(frozen=True)
class WorkflowJob:
    site: str
    namespace: str
    last_month: int
    handover: bool                # the job drives Slurm too: it runs where scontrol can
    secret: str                   # the repository secret holding the cluster's kubeconfig
    # The month applies the site's Terraform: the provider's credentials, as the environment
    # variables its Terraform provider reads, each from the secret <variable>_<SITE>.
    credentials: tuple[tuple[str, str], ...] = ()


# The environment variables each provider's Terraform provider reads its credentials from.
CLOUD_CREDENTIALS = {"aws": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
                     "gcp": ("GOOGLE_CREDENTIALS",),
                     "azure": ("ARM_CLIENT_ID", "ARM_CLIENT_SECRET", "ARM_TENANT_ID", "ARM_SUBSCRIPTION_ID")}


def _secret_suffix(site: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", site.upper())


def _credentials(sf: SiteFiles) -> tuple[tuple[str, str], ...]:
    """Where the site's schedule applies its Terraform month files: the provider's credentials."""
    if sf.schedule is None or not sf.schedule.terraform:
        return ()
    site = sf.view
    return tuple((v, f"{v}_{_secret_suffix(site.name)}") for v in CLOUD_CREDENTIALS.get(site.provider or "", ()))


def _workflow_jobs(sites: tuple[SiteFiles, ...]) -> tuple[WorkflowJob, ...]:
    """One job per site with a schedule script."""
    return tuple(WorkflowJob(s.view.name, s.view.namespace, s.view.horizon_months - 1, bool(s.view.handovers),
                             "KUBECONFIG_" + _secret_suffix(s.view.name), _credentials(s))
                 for s in sites if s.schedule is not None and s.schedule.script)


def workflow(plan: Plan, sites: tuple[SiteFiles, ...]) -> dict[str, str]:
    """ci/schedule.yml: one job per site with a schedule script (none: no file)."""
    jobs = _workflow_jobs(sites)
    if not jobs:
        return {}
    return {WORKFLOW: render_template("schedule/workflow.yml.j2", plan_name=plan.spec_name, jobs=jobs,
                                      cron=CRON, calendar=plan.calendar, horizon_months=plan.horizon_months)}


def render(plan: Plan, catalog: Catalog, sites: tuple[SiteFiles, ...],
           changes: Changes | None = None, baseline: Plan | None = None, edge: tuple = ()) -> dict[str, str]:
    """RUNBOOK.md; `edge`: the plan's edge sites (render/edge.py EdgeFleet), their boxes per location."""
    return {"RUNBOOK.md": render_template("runbook/RUNBOOK.md.j2",
                                          rb=build(plan, catalog, sites, changes, baseline, edge),
                                          route_kinds=ROUTE_KINDS, picker_kinds=PICKER_KINDS)}
