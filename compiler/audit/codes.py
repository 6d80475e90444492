"""Finding codes of the plan audit (docs/audit.md has the same table).

A1xx placement and demand, A2xx policy, A3xx capacity (pools, holdings, reservations),
A4xx site limits, A5xx storage and cloud share, A6xx costs.
"""

from __future__ import annotations

# A1xx: every workload placed on a candidate of its own, demand carried, deadlines met
MISSING_WORKLOAD = "A101"      # a workload of the spec is not in the plan
UNKNOWN_WORKLOAD = "A102"      # the plan has a workload the spec does not (or twice)
PLACEMENT_COUNT = "A103"       # training: not exactly one placement; inference: none
UNKNOWN_CANDIDATE = "A104"     # a placement's candidate id is not among the estimates
CANDIDATE_MISMATCH = "A105"    # a placement disagrees with its candidate (site, instance, GPUs ...)
DEADLINE = "A106"              # a training candidate runs longer than its deadline (or the horizon)
RUNS = "A107"                  # a recurring job's hours by month are not those of its runs
SERVICE_SHORT = "A111"         # a service's replicas carry less than the month's demand
SITE_LOSS = "A112"             # availability >= 0.999: demand not carried without some site
REPLICA_SERIES = "A113"        # monthly replicas malformed, outside the window, or peak misstated

# A2xx: policy
PLACEMENT_POLICY = "A201"      # policy.placement cloud / on_prem broken
GPU_NOT_ALLOWED = "A202"       # a GPU outside policy.allowed_gpus
RESIDENCY = "A203"             # a site outside the workload's `sites`
PIN = "A204"                   # a pin (gpu, gpus, site, instance, pricing) not honoured
SPOT = "A205"                  # spot where the site does not sell it or the job is not interruptible
PRICING_NOT_OFFERED = "A206"   # a pricing the site does not offer (or of the wrong site type)
INSTANCE_TYPES = "A207"        # a service on more instance types at a site than policy allows
MIX_HOLD = "A208"              # a service's replica mix changed sooner than policy.min_months_per_mix
SPOT_SHARE = "A209"            # a training job's spot node-hours above policy.max_spot_share
SERVICE_SITES = "A210"         # a service at more sites than policy.max_sites_per_service
SERVICE_GPU_TYPES = "A211"     # a service on more GPU types than policy.max_gpu_types_per_service
POOL_LIFE = "A212"             # a cloud pool carries replicas for fewer months than policy.min_pool_months

# A3xx: capacity
HOLDING_OVER_POOL = "A301"     # a holding has more nodes in a month than its pool of that pricing
OWNED_EXCEEDED = "A302"        # an owned pool beyond the nodes the spec says the site owns
POOL_HOURS = "A303"            # node-hours of a (pool, pricing, month) beyond what the pool provides
ONPREM_CAPACITY = "A304"       # on-prem GPUs in use beyond (owned + bought) nodes
RESERVATION = "A305"           # a reserved pool at odds with its reservations or whole terms
HOLDINGS = "A306"              # holdings that do not carry the placement's nodes and node-hours
POOL_SHAPE = "A307"            # a pool missing, duplicated, malformed or at odds with the catalog
FABRIC = "A308"                # a multi-node job on a pool wired with another fabric
CLOUD_HOURS = "A309"           # reserved + on-demand node-hours short of the work in a cloud pool

# A4xx: site limits
POWER = "A401"                 # new nodes' kW * PUE beyond power_kw
RACKS = "A402"                 # rack units beyond max_racks * 42
RACK_POWER = "A403"            # node kW beyond max_racks * rack_power_kw
MAX_GPUS = "A404"              # GPUs beyond max_gpus
QUOTA = "A405"                 # GPUs of a type at once beyond a cloud quota

# A5xx: storage and cloud share
STORAGE_SHORT = "A501"         # storage at a site short of its jobs' datasets + checkpoints
STORAGE_TIER = "A502"          # a tier of another provider, below its minimum size, or malformed
CLOUD_SHARE = "A503"           # cloud spend above policy.max_cloud_share of the total

# A6xx: costs
COST_LINE = "A601"             # a cost_breakdown_usd line differs from its re-pricing
COST_TOTAL = "A602"            # total_cost_usd is not the sum of the lines
OBJECTIVE = "A603"             # the solver's objective differs from the total
STORAGE_COST = "A604"          # a storage entry's cost_usd differs from its re-pricing
ATTRIBUTION = "A605"           # workload costs or monthly costs do not add up to the total
PRICE_MISSING = "A606"         # a pricing used where the catalog sells no such price
COMMITMENTS = "A607"           # after_horizon misstates a commitment that outlives the horizon
SAVINGS_PLAN = "A608"          # Savings Plans' cover beyond a commitment, on-demand hours or a site's pricing
CAPACITY_BLOCK = "A609"        # a Capacity Block not sold there, not its job's, or not at its re-derived price
