"""A site as the templates see it: its scheduling domains, storage, training jobs and services.

Every template gets frozen dataclasses from here and from the target modules, never a raw
dict from the spec or the plan.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

from compiler import recurrence
from compiler.catalog.model import Catalog, ServingImage
from compiler.diagnostics import CompileError, Diagnostic
from compiler.estimate.factors import factor
from compiler.estimate.vision import batch_latency_ms
from compiler.plan import UNDATED, Calendar, DisaggregationPlan, Placement, Plan, SitePlan, SpecInputs
from compiler.recurrence import Period
from compiler.render.common import (GIB, NcclProfile, StorageView, nccl_profile, shared_mount,
                                    slug, storage_view)
from compiler.render.domains import (PRICING_TAGS, Domain, ScheduleRow, block_rows, domain_of,
                                     orchestrator_of, placement_pricings, site_domains, spans)
from compiler.serving_stack import Image, KvTransfer, PickerConfig, ProfileRef, Sidecar, Triton, serving_stack


@dataclass(frozen=True)
class JobPart:
    """The nodes of one pricing a training job starts on (Kueue admits each part under its
    pricing's flavor; torchrun numbers the nodes from `offset`)."""

    pricing: str
    nodes: int
    offset: int

    @property
    def name(self) -> str:
        """Short (JobSet pod names, <jobset>-<this>-<job>-<pod>-<5 random>, must fit 63)."""
        return f"w-{PRICING_TAGS.get(self.pricing, slug(self.pricing))}"


@dataclass(frozen=True)
class TrainingJob:
    name: str                     # the workload's name (validated pattern)
    site: str
    domain: Domain
    nodes: int
    gpus: int
    gpus_per_node: int
    tp: int
    pp: int
    dp: int
    ep: int
    cp: int                       # context parallel: tp x pp x cp x dp = gpus; ep divides tp x cp x dp
    recompute: str                # activation recompute: selective | moe | full
    cpus_per_task: int
    pricings: tuple[str, ...]     # the pricings its nodes are held at (Slurm --constraint)
    parts: tuple[JobPart, ...]
    checkpoint_dir: str
    nccl: NcclProfile
    months: str                   # the months it runs, e.g. "0-1" (dated: "2027-01..2027-02")
    holdings: tuple[tuple[str, tuple[int, ...]], ...] = ()   # (pricing, nodes each month)
    when: str = ""                # the same in running text: "months 0-1" (dated: as months)
    # a recurring job (window.every): its runs' cron schedule, period in words, run count and
    # each run's window (a Slurm time limit, D-HH:MM:SS); "" / 0 for a one-time job
    cron: str = ""
    period: str = ""
    runs: int = 0
    time_limit: str = ""
    script_path: str = ""         # where the runbook has ops copy the job script (the shared file system)
    # the catalog's training image for the GPU (Kubernetes' trainer container); None under Slurm
    image: ServingImage | None = None

    @property
    def spot(self) -> bool:
        return "spot" in self.pricings

    @property
    def cpu_request(self) -> int:
        """Kubernetes CPU request: 90% of the task's vCPUs, since a node's allocatable CPU is its
        capacity less what the kubelet and system daemons reserve."""
        return max(1, self.cpus_per_task * 9 // 10)

    @property
    def constraint(self) -> str:
        """Slurm --constraint: any node of the pricings the plan holds for it."""
        return "|".join(self.pricings)

    @property
    def dns_name(self) -> str:
        return slug(self.name)[:40].rstrip("-") or "job"


# vLLM's --quantization for the weight width the estimate sized (vLLM engine arguments): fp8
# quantizes a 16-bit checkpoint as it loads; int8 (W8A8), int4 (AWQ) and fp4 (NVFP4) need a checkpoint
# quantized that way, and the flag makes a wrong one fail at start instead of running bf16.
VLLM_QUANTIZATION = {"bf16": "", "fp8": "fp8", "int8": "compressed-tensors", "int4": "awq",
                     "fp4": "modelopt_fp4"}
# The checkpoint a server reads, over the weights it holds: fp8 reads a 16-bit checkpoint.
CHECKPOINT_SHARE = {"fp8": 2.0}
# Room on the model volume beyond the weights (tokenizer, configs, a second revision's shards).
MODEL_VOLUME_HEADROOM = 1.25
# Where no storage was planned, a claim for the weights alone, of a class every managed
# cluster of the provider offers or can add (a prerequisite the file names): EFS (CSI driver
# add-on), GKE's Filestore class, AKS's Azure Files class, an NFS CSI class on-prem. All are
# ReadWriteMany, so every replica on every node reads the same copy.
MODEL_STORAGE_CLASS = {"aws": ("efs-sc", "the EFS CSI driver add-on"),
                       "gcp": ("standard-rwx", "GKE's Filestore CSI driver"),
                       "azure": ("azurefile-csi", "AKS's Azure Files CSI driver"),
                       None: ("nfs-csi", "an NFS CSI driver")}
MODEL_CLAIM = "model-weights"
SHARED_CLAIM = "shared-storage"

# The autoscaler's target: requests in flight per replica, as a share of the batch the plan sized
# at the SLO. The HPA acts only once the metric is more than its tolerance (10%, the
# kube-controller-manager's --horizontal-pod-autoscaler-tolerance default) off the target, and a
# new replica takes minutes to start (the startup probe allows 15): a target at the batch itself
# lets replicas run past the SLO's batch until the HPA reacts and the new pod is ready. At 0.8
# the HPA adds a replica at 0.8 x 1.1 = 0.88 of the batch, leaving a tenth of it for the traffic
# that arrives while that replica starts. The estimate's sizing is not changed by it.
AUTOSCALER_TARGET_SHARE = 0.8

# vLLM's speculative decoding: a draft model, or draft heads (EAGLE, the heads vLLM's engine
# runs for most models; Medusa and MTP are named by their own checkpoints' configs). The draft's
# checkpoint is read from this folder under the service's model folder.
SPECULATIVE_METHOD = {"draft": "draft_model", "heads": "eagle"}
DRAFT_FOLDER = "draft"
# vLLM took speculative decoding as separate flags (--speculative-model,
# --num-speculative-tokens) up to 0.7, and as one JSON --speculative-config from 0.8.0, which
# deprecated the separate flags (vllm-project/vllm#14434, removed in #15466).
VLLM_SPECULATIVE_CONFIG = (0, 8)
# vLLM 0.10 runs only its V1 engine for speculative decoding, which had no draft-model proposer
# (vLLM's speculative decoding docs for v0.10: "speculative decoding with a draft model is not
# supported"); draft heads (EAGLE) run there.
VLLM_NO_DRAFT_MODEL = ((0, 10), (0, 11))


@dataclass(frozen=True)
class SpeculativeArgs:
    """Speculative decoding as the server runs it: the spec's method, the tokens a step drafts,
    and where the draft (model or heads) is read from."""

    method: str                   # the spec's: draft | heads
    draft_tokens: int
    acceptance: float             # the spec's stated acceptance the estimate sized with
    draft_dir: str

    @property
    def vllm_method(self) -> str:
        return SPECULATIVE_METHOD[self.method]


@dataclass(frozen=True)
class ServingChoices:
    """What a service's spec chose beyond its model and layout, which the server must be told:
    the share of prompt tokens a prefix cache serves (0: none stated) and speculative decoding."""

    prefix_cache_hit: float = 0.0
    speculative: SpeculativeArgs | None = None

    @property
    def prefix_caching(self) -> bool:
        return self.prefix_cache_hit > 0


def serving_choices(inputs: SpecInputs | None, model_dir: str) -> ServingChoices:
    """The serving choices of a workload's spec as plan.json records it (`inputs`: the workload as
    stated, parsed; None for a plan written before plans recorded it: plain serving). A plan read
    from outside may hold anything there: what is not a valid choice is left out."""
    if inputs is None:
        return ServingChoices()
    hit = inputs.value("traffic.prefix_cache_hit")
    hit = float(hit) if isinstance(hit, (int, float)) and not isinstance(hit, bool) and 0 < hit <= 1 else 0.0
    method = inputs.value("speculative.method")
    args = None
    if isinstance(method, str) and method in SPECULATIVE_METHOD:
        tokens, acceptance = inputs.value("speculative.draft_tokens"), inputs.value("speculative.acceptance")
        if (isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 1
                and isinstance(acceptance, (int, float)) and not isinstance(acceptance, bool)):
            args = SpeculativeArgs(method, tokens, float(acceptance), f"{model_dir}/{DRAFT_FOLDER}")
    return ServingChoices(hit, args)


def vllm_version(image: ServingImage) -> tuple[int, ...]:
    """The vLLM release an image runs, as the catalog states it beside the tag (gpus.<GPU>.serving.vllm):
    (0, 10, 1, 1) for vllm/vllm-openai:v0.10.1.1. () where the catalog states none."""
    return image.vllm


@dataclass(frozen=True)
class ModelVolume:
    """The claim services read their weights from: the site's planned shared storage, or where
    none was planned, a claim of its own sized for the checkpoints served there."""

    claim: str
    planned: bool                 # True: the shared-storage claim of the planned tier
    storage_class: str
    driver: str                   # what provides the storage class (a prerequisite)
    capacity_gib: int
    models: tuple[str, ...]       # the workloads whose weights it holds (models/<name>/)


# Disaggregated serving (compiler/serving_stack.yaml holds the images, the KV-transfer connector
# and the endpoint picker's configuration, with their sources): a placement's unit of p prefill
# and d decode servers runs as two Deployments, <service>-prefill and <service>-decode.
# The estimate sizes a prefill server one prompt at a time (compiler/estimate/disaggregated.py:
# its memory holds one prompt's KV cache, its queue is M/D/1), so that is its batch.
PREFILL_BATCH = 1
# A decode pod's vLLM listens here; the routing sidecar takes the pool's port (SERVER_PORT) in
# front of it (llm-d-inference-scheduler v0.4.0's P/D deployments: sidecar 8000, vLLM 8200).
DECODE_SERVER_PORT = 8200


@dataclass(frozen=True)
class PdServer:
    """One role of a disaggregated service's servers: what its pods are told beyond a colocated
    server's (the KV-transfer connector; on decode pods, the routing sidecar in front)."""

    role: str                     # prefill | decode
    unit: DisaggregationPlan      # the placement's replica unit
    units: int                    # the placement's replicas (units) at peak
    kv: KvTransfer
    role_label: str               # the pod label the picker's filters read (llm-d.ai/role)
    sidecar: Sidecar | None = None   # decode pods only

    @property
    def layout(self) -> str:
        """'4 prefill x tp4 + 1 decode x tp4': one unit."""
        g = self.unit
        return f"{g.prefill_instances} prefill x tp{g.prefill_tp} + {g.decode_instances} decode x tp{g.decode_tp}"

    @property
    def instances(self) -> int:
        """Servers of this role in one unit."""
        return self.unit.prefill_instances if self.role == "prefill" else self.unit.decode_instances


# Wide expert parallelism across nodes (compiler/estimate/build.py wide_ep_degrees): a replica of t
# GPUs on t / GPUs-per-node nodes runs as one group of a LeaderWorkerSet (kubernetes-sigs/lws v0.7.0,
# 2025-08-05: a leader pod and size - 1 workers a group, each container told LWS_LEADER_ADDRESS and
# LWS_WORKER_INDEX, the scale subresource's selector its leaders), one pod a node holding all its
# GPUs. Every pod runs vLLM's multi-node data parallel deployment (its "Expert Parallel Deployment"
# guide, v0.10.1.1): --data-parallel-size t, --data-parallel-size-local the pod's GPUs, the leader's
# address and RPC port; the leader serves the API, the workers run --headless from their start rank.
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
LWS_MANIFESTS = "https://github.com/kubernetes-sigs/lws/releases/download/v0.7.0/manifests.yaml"
LWS_LEADER_ADDRESS = "LWS_LEADER_ADDRESS"
LWS_WORKER_INDEX = "LWS_WORKER_INDEX"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"   # "0" on a group's leader
DP_RPC_PORT = 13345               # the guide's --data-parallel-rpc-port
# The guide's all-to-all kernels for multi-node decode (DeepEP's low-latency ones: the estimate's
# all-to-all is checked against their table), and the interface torch's Gloo bootstrap binds on
# InfiniBand clusters (the guide: else the ranks may hang at start).
WIDE_EP_ENV = (("VLLM_ALL2ALL_BACKEND", "deepep_low_latency"), ("GLOO_SOCKET_IFNAME", "eth0"))


# A vision model's server (compiler/serving_stack.yaml, `triton`): Triton Inference Server reads its
# model repository here, assembled from two mounts: the model's config.pbtxt from a ConfigMap the
# render writes (<repository>/<model>/config.pbtxt) and the model file ops copy to the claim
# (models/<service>/ there is the model's version folder <repository>/<model>/1/, holding model.onnx).
TRITON_REPOSITORY = "/model-repository"
TRITON_MODEL_VERSION = "1"
TRITON_MODEL_FILE = "model.onnx"


@dataclass(frozen=True)
class TritonServer:
    """What a vision model's Triton server is told: the plan's batch as the model's max_batch_size
    (the dynamic batcher forms batches up to it), how long the batcher may wait for one to fill
    (the slack between the latency bound and the batch's latency as the estimate sized it), the
    platform and accelerator of the published tables the rate is fitted on, and its ports."""

    stack: Triton
    model: str                    # the model's name in the repository: the workload's
    catalog_model: str            # the catalog's model it serves (resnet-50)
    max_batch_size: int           # the placement's batch
    latency_bound_ms: float       # the spec's slo.latency_p99_ms (0: not in the plan)
    batch_latency_ms: float       # o + B t on the placement's GPU (0: not known)
    config_map: str               # the ConfigMap holding config.pbtxt
    headroom: float = 0.0         # the spec's slo.headroom: the bound's share the batch was sized to leave

    @property
    def sized_bound_ms(self) -> float:
        """The latency the batch was sized within: the bound less the headroom."""
        return self.latency_bound_ms * (1 - self.headroom)

    @property
    def max_queue_delay_us(self) -> int:
        """The batcher's wait for a fuller batch: the sized bound's slack over the batch's latency,
        in whole microseconds (0 where either is not known: a batch of what is queued). The wait
        keeps within the bound less the headroom, so the headroom stays free as the estimate left it."""
        if self.latency_bound_ms <= 0 or self.batch_latency_ms <= 0:
            return 0
        return max(0, math.floor((self.sized_bound_ms - self.batch_latency_ms) * 1000 + 1e-6))

    @property
    def model_dir(self) -> str:
        return f"{TRITON_REPOSITORY}/{self.model}"

    @property
    def version_dir(self) -> str:
        return f"{self.model_dir}/{TRITON_MODEL_VERSION}"

    @property
    def args(self) -> tuple[str, ...]:
        s = self.stack
        return (f"--model-repository={TRITON_REPOSITORY}", f"--http-port={s.http_port}", f"--grpc-port={s.grpc_port}",
                f"--metrics-port={s.metrics_port}")


@dataclass(frozen=True)
class InferenceService:
    name: str                     # the workload's name (the served model)
    site: str
    domain: Domain
    replicas: int                 # peak over the horizon
    gpus_per_replica: int
    tensor_parallel: int
    pipeline_parallel: int        # tensor x pipeline x data = gpus_per_replica
    batch: int
    max_model_len: int            # tokens per sequence the KV cache was sized for (0: not in the plan)
    quantization: str             # vLLM's --quantization ("" for 16-bit weights)
    kv_cache_dtype: str           # vLLM's --kv-cache-dtype ("" for the server's default, 16-bit)
    checkpoint_gb: float          # what the server reads from the model volume
    claim: str                    # the PersistentVolumeClaim the weights are on
    monthly_replicas: tuple[int, ...]
    initial_replicas: int         # the Deployment's replicas as applied (month 0's plan)
    hpa_min: int                  # HPA bounds of its first month with replicas
    hpa_max: int
    first_month: int
    pdb_max_unavailable: int      # 0 means: use min_available instead
    pdb_min_available: int
    model_dir: str
    serving: ServingImage         # the catalog's server image for the GPU, and what it needs of the host
    # Kubernetes object and file name: the workload's name, unless it has several placements at
    # the site (one per candidate: instance, GPUs per replica), then suffixed to keep them apart.
    deployment: str = ""
    choices: ServingChoices = ServingChoices()
    pd: PdServer | None = None    # one role of a disaggregated unit; None: colocated replicas
    # attention data parallel over this many GPUs of the replica, the MoE layers expert parallel over
    # them (the placement's layout dp = ep > 1; compiler/estimate/inference.py expert_parallel_step_s)
    data_parallel: int = 1
    triton: TritonServer | None = None   # a vision model's server; None: vLLM
    headroom: float = 0.0         # the spec's slo.headroom: the batch was sized at its bounds x (1 - headroom)
    # nodes a replica spans (wide expert parallelism: a LeaderWorkerSet group of this many pods, one a
    # node); 1: the replica is one pod of a Deployment
    nodes_per_replica: int = 1
    nvlink_domain: int = 0        # GPUs one NVLink domain of the pool's instances joins beyond a node (GB200 NVL72: 72)

    @property
    def multi_node(self) -> bool:
        return self.nodes_per_replica > 1

    @property
    def gpus_per_pod(self) -> int:
        return self.gpus_per_replica // self.nodes_per_replica

    @property
    def kind(self) -> str:
        """The object that runs the servers: a LeaderWorkerSet for a replica of several nodes."""
        return "LeaderWorkerSet" if self.multi_node else "Deployment"

    @property
    def worker_args(self) -> tuple[str, ...]:
        """A wide replica's worker pods: the leader's arguments, no API server (--headless); the
        start rank is added by worker_command, from the pod's index in its group."""
        return self.args + ("--headless",)

    @property
    def worker_command(self) -> tuple[str, ...]:
        """A worker pod's command: vLLM with its arguments and the first data-parallel rank its GPUs
        hold, LWS_WORKER_INDEX x the GPUs a pod (the guide's --data-parallel-start-rank: the local
        ranks of the nodes before it); the shell does the product."""
        script = (f'exec vllm serve "$@" --data-parallel-start-rank=$(({LWS_WORKER_INDEX} * {self.gpus_per_pod}))')
        return ("/bin/sh", "-c", script, "vllm")

    @property
    def object_name(self) -> str:
        return self.deployment or self.name

    @property
    def role(self) -> str:
        """prefill | decode for a disaggregated service's servers, "" for colocated ones."""
        return self.pd.role if self.pd is not None else ""

    @property
    def vllm_port(self) -> int:
        """Where the server listens: behind the routing sidecar on a decode pod, else the pool's port."""
        return DECODE_SERVER_PORT if self.pd is not None and self.pd.sidecar is not None else SERVER_PORT

    @property
    def monthly_text(self) -> str:
        return ",".join(str(r) for r in self.monthly_replicas)

    @property
    def draft_folder(self) -> str:
        """Where ops copy the speculative draft's checkpoint on the claim."""
        return f"models/{self.name}/{DRAFT_FOLDER}/"

    @property
    def expert_parallel(self) -> bool:
        return self.data_parallel > 1

    @property
    def engine_batch(self) -> int:
        """--max-num-seqs: the sequences one engine schedules. Under data parallelism each of the
        data_parallel ranks is its own engine (vLLM's data parallel deployment: one engine core a
        rank), so the replica's batch is split over them, rounded up."""
        return -(-self.batch // self.data_parallel)

    @property
    def hpa_target(self) -> int:
        """Requests in flight per replica the autoscaler holds: AUTOSCALER_TARGET_SHARE of the
        batch the plan sized (at least one). That batch meets the SLO's bounds less the service's
        headroom, so the target sits below the batch at the bounds by both."""
        return max(1, math.floor(self.batch * AUTOSCALER_TARGET_SHARE))

    @property
    def args(self) -> tuple[str, ...]:
        """The vLLM server's command line: the layout, batch, context length and quantization the
        plan sized, and the spec's serving choices, in the syntax of the image's vLLM release."""
        out = [f"--model={self.model_dir}", f"--served-model-name={self.name}",
               f"--tensor-parallel-size={self.tensor_parallel}"]
        if self.pipeline_parallel > 1:
            out.append(f"--pipeline-parallel-size={self.pipeline_parallel}")
        if self.expert_parallel:
            # vLLM v0.10.1.1: one engine a data-parallel rank, the MoE layers expert parallel over them
            out += [f"--data-parallel-size={self.data_parallel}", "--enable-expert-parallel"]
            if self.multi_node:
                # over the group's nodes: this pod's ranks, and where the leader coordinates them
                out += [f"--data-parallel-size-local={self.gpus_per_pod}",
                        f"--data-parallel-address=$({LWS_LEADER_ADDRESS})", f"--data-parallel-rpc-port={DP_RPC_PORT}"]
        out.append(f"--max-num-seqs={self.engine_batch}")
        if self.max_model_len:
            out.append(f"--max-model-len={self.max_model_len}")
        if self.quantization:
            out.append(f"--quantization={self.quantization}")
        if self.kv_cache_dtype:
            out.append(f"--kv-cache-dtype={self.kv_cache_dtype}")
        # disaggregated: prompts are cached where they are prefilled, tokens drafted where decoded
        if self.choices.prefix_caching and self.role != "decode":
            out.append("--enable-prefix-caching")
        spec = self.choices.speculative
        if spec is not None and self.role != "prefill":
            if vllm_version(self.serving) >= VLLM_SPECULATIVE_CONFIG:
                config = {"method": spec.vllm_method, "model": spec.draft_dir,
                          "num_speculative_tokens": spec.draft_tokens}
                out.append("--speculative-config=" + json.dumps(config, sort_keys=True))
            else:
                # before 0.8 the draft's own config names its kind (a model, or EAGLE/Medusa heads)
                out += [f"--speculative-model={spec.draft_dir}", f"--num-speculative-tokens={spec.draft_tokens}"]
        if self.pd is not None:
            out.append(f"--kv-transfer-config={self.pd.kv.config}")
        out.append(f"--port={self.vllm_port}")
        return tuple(out)


def _parts(p: Placement, nodes: int) -> tuple[JobPart, ...]:
    """The job's nodes by pricing in its first month with nodes (one part if that does not add
    up to the job, as in a plan without holdings)."""
    horizon = max((len(h.monthly_nodes) for h in p.holdings), default=0)
    for m in range(horizon):
        mix = [(h.pricing, h.monthly_nodes[m]) for h in p.holdings
               if m < len(h.monthly_nodes) and h.monthly_nodes[m] > 0]
        if mix:
            if sum(n for _q, n in mix) != nodes:
                break
            out, offset = [], 0
            for pricing in placement_pricings(p):
                n = dict(mix).get(pricing, 0)
                if n:
                    out.append(JobPart(pricing, n, offset))
                    offset += n
            return tuple(out)
    return (JobPart(placement_pricings(p)[0], nodes, 0),)


def training_image(catalog: Catalog, gpu: str, job: str) -> ServingImage:
    """The catalog's training image for a GPU (gpus.<GPU>.training). A GPU without one (an
    overlay's) stops the render: a CUDA image does not run on an AMD GPU, nor an old one on
    Blackwell, and a wrong one fails only when the pod starts."""
    rec = catalog.gpus.get(gpu)
    if rec is None or rec.training is None:
        raise CompileError([Diagnostic(
            "E711", f"training job {job!r} runs on {gpu}, for which the catalog names no training image",
            hint=f"give it `training: {{image, version, runtime, driver, source}}` under gpus.{gpu} "
                 "(a framework release that supports the GPU; docs/catalog.md)")])
    return rec.training


def training_jobs(plan: Plan, site: str, domains: tuple[Domain, ...], orchestrator: str,
                  storage: StorageView | None, catalog: Catalog) -> tuple[TrainingJob, ...]:
    """The site's training jobs under one orchestrator; Kubernetes' carry their GPU's training
    image (the catalog: needed there)."""
    jobs = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "training" or orchestrator_of(w) != orchestrator:
            continue
        for p in w.placements:
            if p.site != site:
                continue
            domain = domain_of(domains, p)
            shape = domain.shape
            nodes = max(1, p.nodes)
            per_node = max(1, min(shape.gpus, math.ceil(p.gpus / nodes)))
            held = [sum(h.monthly_nodes[m] for h in p.holdings if m < len(h.monthly_nodes))
                    for m in range(plan.horizon_months)]
            cal = plan.calendar
            months = cal.runs([m for m, n in enumerate(held) if n]) or cal.name(w.start_month)
            jobs.append(TrainingJob(
                name=w.name, site=site, domain=domain, nodes=nodes, gpus=p.gpus,
                gpus_per_node=per_node, tp=w.layout.tp, pp=w.layout.pp, dp=w.layout.dp,
                ep=w.layout.ep, cp=w.layout.cp, recompute=w.layout.recompute, cpus_per_task=max(1, shape.vcpus * per_node // shape.gpus),
                pricings=placement_pricings(p), parts=_parts(p, nodes),
                checkpoint_dir=f"{shared_mount(storage)}/checkpoints/{w.name}",
                nccl=nccl_profile(domain.fabric, catalog, domain.instance),
                months=months, when=months if cal.dated else f"months {months}",
                holdings=tuple((h.pricing, tuple(h.monthly_nodes)) for h in p.holdings),
                script_path=f"{shared_mount(storage)}/jobs/{w.name}.sbatch",
                image=training_image(catalog, shape.gpu, w.name) if orchestrator == "kubernetes" else None,
                **_recurring(w),
            ))
    return tuple(jobs)


def _recurring(w) -> dict:
    """A recurring job's launcher fields: one cron schedule starts every run, each limited to its
    window."""
    period = Period.parse(w.every or "")
    if period is None:
        return {}
    window_h = recurrence.window_hours(period, w.deadline_days)
    days, hours = divmod(int(round(window_h)), 24)
    return dict(cron=period.cron, period=period.words, runs=w.runs, time_limit=f"{days}-{hours:02d}:00:00")


def _kv_cache_dtype(quantization: str, catalog: Catalog) -> str:
    """A one-byte KV cache, as the estimate sized it, is vLLM's fp8 cache (it has no int8 one)."""
    if not quantization:
        return ""
    return "fp8" if factor(catalog, f"kv_bytes.{quantization}") == 1 else ""


def serving_image(catalog: Catalog, gpu: str, service: str) -> ServingImage:
    """The catalog's server image for a GPU (gpus.<GPU>.serving). A GPU without one (an overlay's)
    stops the render: no image fits every GPU, and a wrong one fails only when the pod starts."""
    rec = catalog.gpus.get(gpu)
    if rec is None or rec.serving is None:
        raise CompileError([Diagnostic(
            "E711", f"service {service!r} runs on {gpu}, for which the catalog names no serving image",
            hint=f"give it `serving: {{image, version, runtime, driver, source}}` under gpus.{gpu} "
                 "(an inference server release that supports the GPU; docs/catalog.md)")])
    return rec.serving


def _check_speculative(choices: ServingChoices, image: ServingImage, gpu: str, service: str) -> None:
    """A draft model on a vLLM release that cannot run one stops the render: the server would
    refuse to start."""
    spec = choices.speculative
    if spec is None or spec.method != "draft":
        return
    if VLLM_NO_DRAFT_MODEL[0] <= vllm_version(image)[:2] < VLLM_NO_DRAFT_MODEL[1]:
        raise CompileError([Diagnostic(
            "E713", f"service {service!r} speculates with a draft model on {gpu}, whose serving image "
                    f"{image.ref} runs no draft-model speculation (vLLM 0.10 runs draft heads only)",
            hint="state `speculative: {method: heads, ...}` (EAGLE heads), or give the GPU a serving image "
                 "whose vLLM release runs draft models (docs/catalog.md)")])


# The first vLLM release that runs --data-parallel-size with --enable-expert-parallel (its
# "Expert Parallel Deployment" guide, v0.10.1.1); compiler/estimate/build.py sizes such replicas
# only on images that do.
VLLM_EXPERT_PARALLEL = (0, 10)


def _check_expert_parallel(dp: int, image: ServingImage, gpu: str, vendor: str, service: str) -> None:
    """An expert-parallel placement on a serving image whose vLLM cannot run one (before 0.10, or not
    a CUDA build: an AMD GPU's) stops the render (an overlay that swapped the GPU's image after the
    plan was made): the server would not start."""
    if dp > 1 and (vendor != "nvidia" or vllm_version(image)[:2] < VLLM_EXPERT_PARALLEL):
        raise CompileError([Diagnostic(
            "E715", f"service {service!r} runs attention data parallel x {dp} with expert parallel MoE layers "
                    f"on {gpu}, whose serving image {image.ref} does not (vLLM 0.10 or later on CUDA does)",
            hint="give the GPU a serving image that runs vLLM 0.10 or later on CUDA (docs/catalog.md), or "
                 "re-plan on the catalog the render reads")])


def triton_image(catalog: Catalog, gpu: str, service: str) -> ServingImage:
    """The Triton image for a vision service's GPU (compiler/serving_stack.yaml); a GPU none runs on
    stops the render (the estimate gives such a GPU no vision candidate)."""
    rec = catalog.gpus.get(gpu)
    image = serving_stack().triton.image_for(rec) if rec is not None else None
    if image is None:
        raise CompileError([Diagnostic(
            "E711", f"vision service {service!r} runs on {gpu}, for which compiler/serving_stack.yaml lists no "
                    "Triton Inference Server image",
            hint="a Triton release whose architectures hold the GPU's (triton.images there)")])
    return image


def slo_headroom(w) -> float:
    """The share of each latency bound the plan sized the service's replicas to leave free (the
    spec's slo.headroom, as plan.json records it); 0 for a plan that records none."""
    h = w.inputs.value("slo.headroom") if w.inputs is not None else None
    return float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) and 0 <= h < 1 else 0.0


def _triton(w, gpu: str, batch: int, object_name: str, catalog: Catalog) -> TritonServer:
    """A vision placement's Triton server: its batch, and the latency that batch takes on the GPU
    as the estimate sizes it (compiler/estimate/vision.py)."""
    bound = w.inputs.value("slo.latency_p99_ms") if w.inputs is not None else None
    name = w.inputs.value("model") if w.inputs is not None else None
    model = catalog.models.get(name) if isinstance(name, str) else None
    latency = batch_latency_ms(model, catalog.gpus[gpu], batch, catalog) if model is not None else None
    return TritonServer(serving_stack().triton, w.name, name if isinstance(name, str) else "", batch,
                        float(bound) if isinstance(bound, (int, float)) and not isinstance(bound, bool) else 0.0,
                        latency or 0.0, f"{object_name}-model-config", slo_headroom(w))


def inference_services(plan: Plan, site: str, domains: tuple[Domain, ...], catalog: Catalog,
                       claim: str = SHARED_CLAIM) -> tuple[InferenceService, ...]:
    out = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "inference":
            continue
        here = [p for p in w.placements if p.site == site and p.replicas > 0]
        for p in here:
            per_replica = p.gpus_per_replica or max(1, p.gpus // p.replicas)
            deployment = ""
            if len(here) > 1:
                same_size = sum(1 for q in here if (q.gpus_per_replica or q.gpus // q.replicas) == per_replica)
                deployment = f"{w.name}-tp{per_replica}" + (f"-{slug(p.instance)}" if same_size > 1 else "")
            monthly = tuple(p.monthly_replicas) or (p.replicas,) * plan.horizon_months
            first = next((m for m, r in enumerate(monthly) if r > 0), 0)
            first_r = monthly[first] if monthly else p.replicas
            spare = p.replicas >= 2
            # The placement's own layout and batch: a service's candidates differ in both, and
            # the workload's layout is only its largest placement's.
            # A placement without a layout (a plan built by hand) runs its GPUs as one tensor group.
            pp = max(1, p.layout.pp)
            # attention data parallel with expert parallel MoE layers: the layout's dp = ep GPUs
            dp = p.layout.dp if p.layout.ep > 1 and p.layout.tp * pp * p.layout.dp == per_replica else 1
            tp = p.layout.tp if p.layout.tp * pp * dp == per_replica else per_replica // pp
            weights = float(w.estimate.weights_gb or 0.0)
            domain = domain_of(domains, p)
            vision = w.estimate.images_per_s is not None       # a vision model's service: Triton
            batch = max(1, p.batch or int(w.estimate.batch or 1))
            if vision:
                image, choices = triton_image(catalog, domain.shape.gpu, w.name), ServingChoices()
                triton = _triton(w, domain.shape.gpu, batch, deployment or w.name, catalog)
            else:
                image, triton = serving_image(catalog, domain.shape.gpu, w.name), None
                choices = serving_choices(w.inputs, f"/models/{w.name}")
                _check_speculative(choices, image, domain.shape.gpu, w.name)
                gpu_rec = catalog.gpus.get(domain.shape.gpu)
                _check_expert_parallel(dp, image, domain.shape.gpu, gpu_rec.vendor if gpu_rec else "", w.name)
            # a replica wider than a node (wide expert parallelism): one pod a node, its GPUs all
            node_gpus = domain.shape.gpus
            nodes = per_replica // node_gpus if dp > 1 and per_replica > node_gpus and per_replica % node_gpus == 0 else 1
            svc = InferenceService(
                name=w.name, site=site, domain=domain, replicas=p.replicas, nodes_per_replica=nodes,
                nvlink_domain=(getattr(catalog.instances.get(domain.instance), "nvlink_domain_gpus", 0) or 0),
                gpus_per_replica=per_replica, tensor_parallel=max(1, tp), pipeline_parallel=pp,
                data_parallel=dp, batch=batch,
                max_model_len=w.max_model_len,
                quantization=VLLM_QUANTIZATION.get(w.quantization, ""),
                kv_cache_dtype=_kv_cache_dtype(w.quantization, catalog),
                checkpoint_gb=weights * CHECKPOINT_SHARE.get(w.quantization, 1.0), claim=claim,
                monthly_replicas=monthly, initial_replicas=monthly[0] if monthly else p.replicas,
                hpa_min=min(2, first_r), hpa_max=max(1, first_r), first_month=first,
                pdb_max_unavailable=1 if spare else 0, pdb_min_available=0 if spare else 1,
                model_dir=f"/models/{w.name}", deployment=deployment,
                serving=image, choices=choices, triton=triton, headroom=slo_headroom(w),
            )
            out += _disaggregated(svc, p.disaggregation) if p.disaggregation is not None else [svc]
    return tuple(out)


def _disaggregated(unit: InferenceService, g: DisaggregationPlan) -> list[InferenceService]:
    """A disaggregated placement's two Deployments, from the service as one unit a replica: each
    role's servers are the units times its instances a unit, month by month, at its own tensor
    parallel; the prefill servers at PREFILL_BATCH, the decode servers at the placement's batch."""
    stack = serving_stack()
    out = []
    for role, tp, n in (("prefill", g.prefill_tp, g.prefill_instances), ("decode", g.decode_tp, g.decode_instances)):
        monthly = tuple(r * n for r in unit.monthly_replicas)
        first_r = monthly[unit.first_month] if monthly else unit.replicas * n
        replicas = unit.replicas * n
        pd = PdServer(role, g, unit.replicas, stack.kv_transfer, stack.role_label,
                      stack.sidecar if role == "decode" else None)
        out.append(replace(
            unit, replicas=replicas, gpus_per_replica=tp, tensor_parallel=tp, pipeline_parallel=1,
            batch=PREFILL_BATCH if role == "prefill" else unit.batch,
            monthly_replicas=monthly, initial_replicas=monthly[0] if monthly else replicas,
            hpa_min=min(2, first_r), hpa_max=max(1, first_r),
            pdb_max_unavailable=1 if replicas >= 2 else 0, pdb_min_available=0 if replicas >= 2 else 1,
            deployment=f"{unit.object_name}-{role}", pd=pd))
    return out


# The routing layer in front of each service: the Kubernetes Gateway API with its inference
# extension (gateway-api-inference-extension v1.2.0, November 2025; its inferencepool chart's
# manifests): an InferencePool of the service's server pods whose endpoint picker (EPP) chooses
# the replica for each request from the servers' queue, KV-cache use and, where the service
# caches prefixes, the prompt prefixes each replica holds.
ENDPOINT_PICKER_IMAGE = "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"
# The GatewayClass a site's Gateway names, and what provides it (a prerequisite the file names).
# GKE's own controller implements InferencePool backends (the regional internal Application Load
# Balancer; it needs a proxy-only subnet); elsewhere Istio 1.28 or later with its inference
# extension support switched on (pilot env ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true).
GATEWAY_CLASS = {"gcp": ("gke-l7-rilb", "GKE's Gateway controller (a proxy-only subnet in the region)"),
                 None: ("istio", "Istio 1.28 or later, installed with values.pilot.env."
                                 "ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true")}
GATEWAY_NAME = "inference"
SERVER_PORT = 8000
EPP_PORT = 9002
# The endpoint picker's scorers and weights (the chart's default scheduling profile); the
# prefix-cache scorer only where the service caches prefixes.
EPP_SCORERS = (("queue-scorer", 2), ("kv-cache-utilization-scorer", 2))
EPP_PREFIX_SCORER = ("prefix-cache-scorer", 3)
# A generated response can stream for minutes; the route's request timeout.
ROUTE_TIMEOUT = "300s"


@dataclass(frozen=True)
class PdPicker:
    """The endpoint picker of a disaggregated service: llm-d's inference scheduler, which picks a
    decode server and a prefill server for each request (compiler/serving_stack.yaml)."""

    image: Image
    config: PickerConfig
    role_label: str
    layouts: tuple[str, ...]      # each disaggregated placement's unit: '4 prefill x tp4 + 1 decode x tp4'


@dataclass(frozen=True)
class ServiceRoute:
    """A service's routing at a site: its InferencePool (every server pod of the service there,
    whichever placement), endpoint picker and HTTPRoute from the site's Gateway."""

    name: str                     # the workload's name (the served model)
    deployments: tuple[str, ...]  # the server Deployments the pool selects
    prefix_aware: bool            # the service caches prefixes: the picker scores them
    pd: PdPicker | None = None    # disaggregated here: llm-d's scheduler picks prefill and decode
    # a vision model's Triton servers: no InferencePool (its picker reads vLLM's metrics and
    # OpenAI-style requests); the HTTPRoute sends to each Deployment's Service on this port
    triton_port: int = 0

    @property
    def picker_image(self) -> str:
        return self.pd.image.ref if self.pd is not None else ENDPOINT_PICKER_IMAGE

    @property
    def pd_plugins(self) -> tuple[tuple[str, tuple[tuple[str, object], ...]], ...]:
        """The disaggregated picker's plugins (type, parameters), the prefix-cache scorer added
        where the service caches prefixes."""
        if self.pd is None:
            return ()
        out = tuple((p.type, p.parameters) for p in self.pd.config.plugins)
        return out + (((self.pd.config.prefix_scorer.plugin, ()),) if self.prefix_aware else ())

    @property
    def pd_profiles(self) -> tuple[tuple[str, tuple[ProfileRef, ...]], ...]:
        """Its scheduling profiles; the prefix-cache scorer in the prefill profile, where prompts
        are cached, when the service caches prefixes."""
        if self.pd is None:
            return ()
        extra = (self.pd.config.prefix_scorer,) if self.prefix_aware else ()
        return tuple((name, refs + (extra if name == "prefill" else ())) for name, refs in self.pd.config.profiles)

    @property
    def pool(self) -> str:
        return slug(self.name)[:63].rstrip("-") or "pool"

    @property
    def picker(self) -> str:
        """The EPP's Deployment, Service, ConfigMap and ServiceAccount (the chart's <pool>-epp)."""
        return (slug(self.name)[:40].rstrip("-") or "pool") + "-epp"

    @property
    def path(self) -> str:
        """Where clients reach it on the Gateway (the prefix is removed before the server)."""
        return f"/{self.name}"

    @property
    def scorers(self) -> tuple[tuple[str, int], ...]:
        return EPP_SCORERS + ((EPP_PREFIX_SCORER,) if self.prefix_aware else ())


@dataclass(frozen=True)
class Gateway:
    name: str
    gateway_class: str
    provided_by: str              # what implements the class (a prerequisite)


def service_routes(services: tuple[InferenceService, ...]) -> tuple[ServiceRoute, ...]:
    names = sorted({s.name for s in services})
    return tuple(ServiceRoute(n, tuple(s.object_name for s in services if s.name == n),
                              any(s.choices.prefix_caching for s in services if s.name == n),
                              _pd_picker([s for s in services if s.name == n]),
                              next((s.triton.stack.http_port for s in services if s.name == n and s.triton), 0))
                 for n in names)


def _pd_picker(servers: list[InferenceService]) -> PdPicker | None:
    """llm-d's picker where any of a service's servers at the site are disaggregated."""
    layouts = tuple(dict.fromkeys(s.pd.layout for s in servers if s.pd is not None))
    if not layouts:
        return None
    stack = serving_stack()
    return PdPicker(stack.scheduler, stack.picker, stack.role_label, layouts)


@dataclass(frozen=True)
class SiteView:
    name: str
    type: str
    provider: str | None
    region: str | None
    plan_name: str
    horizon_months: int
    domains: tuple[Domain, ...]
    storage: StorageView | None
    training_slurm: tuple[TrainingJob, ...]
    training_kubernetes: tuple[TrainingJob, ...]
    inference: tuple[InferenceService, ...]
    models: ModelVolume | None = None
    calendar: Calendar = UNDATED  # names the plan's months for people (the spec's start)

    @property
    def cloud(self) -> bool:
        return self.type == "cloud"

    @property
    def routes(self) -> tuple[ServiceRoute, ...]:
        return service_routes(self.inference)

    @property
    def gateway(self) -> Gateway:
        cls, by = GATEWAY_CLASS.get(self.provider, GATEWAY_CLASS[None])
        return Gateway(GATEWAY_NAME, cls, by)

    def uses(self, orchestrator: str) -> bool:
        return any(d.blocks_for(orchestrator) for d in self.domains)

    @property
    def slurm_domains(self) -> tuple[Domain, ...]:
        return tuple(d for d in self.domains if d.blocks_for("slurm"))

    @property
    def kubernetes_domains(self) -> tuple[Domain, ...]:
        return tuple(d for d in self.domains if d.blocks_for("kubernetes"))

    @property
    def namespace(self) -> str:
        return slug(self.plan_name)[:63].rstrip("-") or "ml"

    @property
    def mount(self) -> str:
        return shared_mount(self.storage)

    @property
    def schedule(self) -> tuple[ScheduleRow, ...]:
        """Month by month: the nodes each orchestrator holds, and each service's replicas."""
        rows = [r for d in self.domains for b in d.blocks for r in block_rows(b)]
        for svc in self.inference:
            for first, last, count in spans(svc.monthly_replicas):
                rows.append(ScheduleRow(self.name, first, last, "replicas", "kubernetes",
                                        svc.domain.name, "", svc.object_name, int(count), ""))
        return tuple(rows)

    @property
    def handovers(self) -> tuple[ScheduleRow, ...]:
        """The schedule rows of blocks whose static nodes change hands between orchestrators."""
        shared = {(d.name, b.pricing) for d in self.domains for b in d.blocks
                  if b.handover[0] and b.handover[0] <= b.handover[1]}
        return tuple(r for r in self.schedule if r.kind == "nodes" and (r.domain, r.pricing) in shared)


def model_volume(site: SitePlan, storage: StorageView | None,
                 services: tuple[InferenceService, ...]) -> ModelVolume | None:
    if not services:
        return None
    names = tuple(sorted({s.name for s in services}))
    if storage is not None:
        return ModelVolume(SHARED_CLAIM, True, storage.tier, "the tier's CSI driver", storage.capacity_gib, names)
    gb = sum(max(s.checkpoint_gb for s in services if s.name == n) for n in names)
    storage_class, driver = MODEL_STORAGE_CLASS.get(site.provider, MODEL_STORAGE_CLASS[None])
    return ModelVolume(MODEL_CLAIM, False, storage_class, driver,
                       max(1, math.ceil(gb * MODEL_VOLUME_HEADROOM * 1e9 / GIB)), names)


def site_view(plan: Plan, catalog: Catalog, site: SitePlan) -> SiteView:
    domains = site_domains(plan, catalog, site.name, cloud=site.type == "cloud")
    storage = storage_view(plan, site.name)
    services = inference_services(plan, site.name, domains, catalog,
                                  SHARED_CLAIM if storage is not None else MODEL_CLAIM)
    return SiteView(
        name=site.name, type=site.type, provider=site.provider, region=site.region,
        plan_name=plan.spec_name, horizon_months=plan.horizon_months, domains=domains,
        storage=storage,
        training_slurm=training_jobs(plan, site.name, domains, "slurm", storage, catalog),
        training_kubernetes=training_jobs(plan, site.name, domains, "kubernetes", storage, catalog),
        inference=services, models=model_volume(site, storage, services), calendar=plan.calendar,
    )
