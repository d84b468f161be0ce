"""The kinds of declaration and the typed fields of each.

Physical kinds have a level; an instance may contain only instances of lower levels (a host holds
GPUs, a rack holds hosts, ... a site holds halls, pods, rows or racks). Grouping kinds accept
members under any field name, so `storage_racks = 4 x StorageRack` needs no schema change; every
other field must be one the kind knows, so that a misspelt field is an error with a hint."""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple

import attrs

from astral_dsl import records

from astral_dsl.model.domains import POSITIVE, Domain, domain
from astral_dsl.model.fluid_names import check_fluid_name
from astral_dsl.model.names import check_pattern
from astral_dsl.units import DIMENSION_TYPES


# ---- field types -----------------------------------------------------------------------------------
@records.frozen
class QType:
    dim: str                      # a key of DIMENSION_TYPES
    whole: bool = False           # counts
    low: Optional[float] = None   # declared inclusive bounds in SI units (E309)
    high: Optional[float] = None
    domain: Optional[Domain] = None   # sign and plausible bounds (E314-E316; model/domains.py)

    def describe(self) -> str:
        return {"count": "a whole number", "ratio": "a ratio such as `75 %`",
                "number": "a number"}.get(self.dim, f"a {self.dim.replace('_', ' ')} quantity")


@records.frozen
class BoolType:
    def describe(self) -> str:
        return "`true` or `false`"


@records.frozen
class StrType:
    # the domain of the string: a function returning None or (code, message, hint)
    check: Optional[Callable[[str], Optional[Tuple[str, str, str]]]] = None

    def describe(self) -> str:
        return "a string"


@records.frozen
class EnumType:
    values: Tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{v}`" for v in self.values)


@records.frozen
class RefType:
    kinds: Tuple[str, ...]

    def describe(self) -> str:
        return " or ".join(f"a {k}" for k in self.kinds)


@records.frozen
class ListType:
    item: object

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"


@records.frozen
class BundleType:
    dim: str

    @property
    def item(self) -> "QType":
        """Each item of the bundle (a link speed): in the dimension's default domain."""
        return QType(self.dim, domain=domain(self.dim))

    def describe(self) -> str:
        return f"a bundle such as `64 x 400 Gb/s` ({self.dim})"


@records.frozen
class AnyType:
    def describe(self) -> str:
        return "any value"


@records.frozen
class FieldSpec:
    type: object
    required: bool = False
    doc: str = ""


def q(dim: str, doc: str = "", required: bool = False, low=None, high=None, sign=None,
      limit=None, why=None, least=None, least_why=None) -> FieldSpec:
    """A quantity field: `low`/`high` are its declared range (E309), `sign`, `limit` and `least`
    narrow the domain of its dimension (model/domains.py)."""
    assert dim in DIMENSION_TYPES, dim
    whole = dim == "count"
    if dim == "ratio" and low is None:
        low = 0
    return FieldSpec(QType(dim, whole, low, high, domain(dim, sign, limit, why, least, least_why)),
                     required, doc)


def enum(*values: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(EnumType(tuple(values)), required, doc)


def ref(*kinds: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(RefType(tuple(kinds)), required, doc)


STR = FieldSpec(StrType())
BOOL = FieldSpec(BoolType())
ANY = FieldSpec(AnyType())


@records.frozen
class KindSpec:
    name: str
    doc: str
    fields: Mapping[str, FieldSpec]
    level: Optional[int] = None                 # physical hierarchy level
    records: Mapping[str, str] = attrs.field(factory=dict)   # record field -> record kind
    nested: Tuple[str, ...] = ()                # kinds that may be declared inside
    open_members: bool = False                  # accepts instance members under any name
    statements: Tuple[str, ...] = ("check", "let")  # statement forms allowed in the body
    root: bool = False                          # top-level declarations are instantiated

    @property
    def physical(self) -> bool:
        return self.level is not None


_COMMON = {"source": STR, "vendor": STR, "note": STR, "price": q("money", "purchase price")}


def _kind(name, doc, fields, **kw) -> KindSpec:
    merged = dict(_COMMON)
    merged.update(fields)
    return KindSpec(name, doc, merged, **kw)


_PHYS = {"power": q("power", "peak electrical draw"),
         "liquid_share": q("ratio", "share of heat removed by cold plates", high=1)}
# a device's name, or the pattern that names each replica: `"gpu-{pod}-{rack:03}-{host}"`
# (model/names.py)
NAME = FieldSpec(StrType(check_pattern), doc="its name, or a pattern naming each replica, e.g. "
                                             "`\"gpu-{pod}-{rack:03}-{host}\"`")
_GROUPING_FIELDS = dict(_PHYS, power_limit=q("power", "maximum allowed draw"),
                        utilization=q("ratio", "average over peak load", high=1),
                        units=q("length", "height in rack units, e.g. `48 U`"), name=NAME)

KINDS: dict[str, KindSpec] = {}


def _register(spec: KindSpec) -> None:
    KINDS[spec.name] = spec


_register(_kind("gpu", "an accelerator", dict(
    _PHYS,
    memory=q("information", "HBM capacity", limit=8e15, why="1 PB of memory on one device"),
    memory_bandwidth=q("bandwidth", "HBM bandwidth"),
    flops_bf16=q("compute", "dense BF16 peak"),
    flops_fp16=q("compute", "dense FP16 peak"),
    flops_fp8=q("compute", "dense FP8 peak (also MXFP8's)"),
    flops_fp4=q("compute", "dense FP4 peak (NVFP4 / MXFP4)"),
    flops_fp32=q("compute", "FP32 peak"),
    flops_power=q("power", "board power at which the peak FLOP/s are quoted: a lower `power` "
                           "caps the clocks (default: `power`)", sign=POSITIVE),
    sms=q("count", "streaming multiprocessors (the units a GEMM's tiles are spread over)", low=1,
          limit=65536, why="65,536 SMs, far above any GPU"),
    architecture=enum("ampere", "hopper", "blackwell", "other",
                      doc="the GPU generation: how far its sustained clocks fall below the "
                          "quoted peak's (a fitted factor per generation)"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    max_supply=q("temperature", "hottest coolant supply the cold plate accepts"),
    system_power=q("power", "peak draw of the vendor's 8-GPU server built on it (HGX/DGX)"),
    system_units=q("length", "height of that server in rack units"),
), level=0))
# pluggable form factors of network cages and modules (SFF-8665 QSFP28, QSFP56 and QSFP112; the
# QSFP-DD MSA; the OSFP MSA)
FORM_FACTORS = ("qsfp28", "qsfp56", "qsfp112", "qsfp_dd", "osfp")
_register(_kind("nic", "a network adapter", dict(
    _PHYS, ports=q("count", "network ports", low=1, limit=64, why="64 ports on one adapter"),
    port_speed=q("bandwidth", "speed per port"),
    protocol=enum("infiniband", "roce", "ethernet"),
    form_factor=enum(*FORM_FACTORS, doc="the cage of each port"),
    name=FieldSpec(StrType(check_pattern), doc="the interface name of each port, e.g. "
                                               "`\"eth{nic}\"` or `\"ib{nic}p{port}\"`")),
    level=0))
_register(_kind("switch", "a network switch", dict(
    _PHYS, ports=q("count", "ports at `port_speed`", low=1, limit=65536,
                   why="65,536 ports, far above any switch radix"),
    port_speed=q("bandwidth"),
    capacity=q("bandwidth", "switching capacity"),
    max_ports=q("count", "ports with breakout", limit=65536, why="65,536 ports"),
    protocol=enum("infiniband", "roce", "ethernet"), units=q("length"),
    form_factor=enum(*FORM_FACTORS, doc="the cage type of its ports"),
    cages=q("count", "front-panel cages (a twin-port OSFP cage holds two ports)", low=1,
            limit=65536, why="65,536 cages")), level=0))
_register(_kind("cpu", "a host processor", dict(_PHYS, cores=q("count", limit=1e6)), level=0))
_register(_kind("host", "a server", dict(
    _PHYS, units=q("length", "height in rack units"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    nvlink_domain=enum("host", "rack", doc="the GPUs one NVLink domain joins: the host's own, or "
                       "every GPU of its rack (NVLink switch trays: GB200 NVL72)"),
    idle_power=q("power", "not used by any analysis (an error, E630)"), name=NAME), level=1,
    open_members=True))
_register(_kind("rack", "a rack of hosts", dict(
    _GROUPING_FIELDS, feeds=FieldSpec(ListType(RefType(("feeder",))),
                                      doc="the feeders that supply it (A/B)"),
    loop=ref("loop", doc="the liquid loop that cools it")), level=2, open_members=True))
for _name, _level, _doc in (("row", 3, "a row (block) of racks"), ("block", 3, "a block of racks"),
                            ("pod", 4, "a pod"), ("hall", 5, "a data hall"),
                            ("site", 6, "a site: the design's root")):
    _register(_kind(_name, _doc, dict(_GROUPING_FIELDS), level=_level, open_members=True,
                    root=_name == "site",
                    nested=("fabric", "power", "cooling", "feeder", "loop", "air", "facility")))

_register(_kind("fabric", "the network: rails, planes and switch tiers", dict(
    rails=q("count", "rails (GPU i of each host -> rail i)", low=1, limit=1024,
            why="1,024 rails: one per GPU of a host"),
    planes=q("count", "planes (NIC port j -> plane j)", low=1, limit=64,
             why="64 planes: one per port of a NIC"),
    dual_homing=BOOL,
    max_oversubscription=q("number", "largest down/up ratio allowed at any tier",
                           sign=POSITIVE, limit=1e3),
), nested=("tier",)))
_register(_kind("tier", "a switch tier", dict(
    switch=ref("switch", required=True),
    scope=enum("rack", "row", "block", "pod", "hall", "site",
               doc="the grouping level one set of these switches serves"),
    per=FieldSpec(ListType(EnumType(("rail", "plane"))), doc="replicated per rail and/or plane"),
    down=FieldSpec(BundleType("bandwidth"), required=True, doc="downlinks per switch"),
    up=FieldSpec(BundleType("bandwidth"), doc="uplinks per switch"),
    optics_power=q("power", "power of the optics per switch"),
    medium=FieldSpec(ListType(RefType(("medium",))),
                     doc="what the downlinks are built with: a `medium`, or a list of them in "
                         "order of preference (the first that reaches `length` is used)"),
    length=q("length", "the longest of the downlinks (cable run), checked against the "
                       "medium's reach", low=0),
    name=FieldSpec(StrType(check_pattern), doc="a pattern naming each switch, e.g. "
                                               "`\"leaf-{rail}{plane}-{index:02}\"`"),
)))
_register(_kind("medium", "a link medium: copper cable or optics", dict(
    type=enum("dac", "acc", "aec", "aoc", "optics", required=True,
              doc="passive copper, active copper, active electrical, active optical cable, or "
                  "pluggable optics with fibre"),
    reach=q("length", "the longest link the medium is specified for", required=True,
            sign=POSITIVE),
    speed=q("bandwidth", "the speed of one link"),
    form_factor=enum(*FORM_FACTORS, doc="module or connector at the upper end (the tier's "
                                        "switch)"),
    ports=q("count", "links one module or connector carries at the upper end: 2 for a "
                     "twin-port module, 2 or 4 for a breakout", low=1, limit=64,
            why="64 links on one module"),
    power=q("power", "power of one module at the upper end", limit=1e3,
            why="1 kW, far above any pluggable module"),
    lower_form_factor=enum(*FORM_FACTORS, doc="at the lower end (NIC or lower switch); "
                                              "default: `form_factor`"),
    lower_ports=q("count", "links per module or connector at the lower end; default 1",
                  low=1, limit=64, why="64 links on one module"),
    lower_power=q("power", "power of one module at the lower end; default: `power` when "
                           "`lower_ports` equals `ports`", limit=1e3,
                  why="1 kW, far above any pluggable module"),
)))
_register(_kind("power", "the electrical system", {},
                nested=("feeder", "rectifier", "battery", "standard", "cable"),
                open_members=True))
_register(_kind("standard", "a voltage standard and its normal range", dict(
    nominal=q("voltage", required=True), min=q("voltage"), max=q("voltage"),
    current=enum("dc", "ac"))))
_register(_kind("feeder", "a power feed (HVDC or AC)", dict(
    current=enum("dc", "ac", required=True), voltage=q("voltage", required=True),
    capacity=q("power", "rated power", sign=POSITIVE), phases=q("count", low=1, high=3),
    power_factor=q("ratio", high=1, sign=POSITIVE), side=enum("A", "B"), serves=ANY,
    standard=ref("standard"),
    efficiency=q("ratio", "conversion efficiency", high=1, sign=POSITIVE),
    conductor_area=q("area", sign=POSITIVE, limit=1.0, why="1 m^2 of copper"),
    length=q("length"), conductor_temperature=q("temperature"),
    max_voltage_drop=q("ratio", high=1),
    count=q("count", "how many such feeders", low=1, limit=1e6),
    conductors=q("count", "parallel conductor sets", low=1, limit=1e4),
    cable=ref("cable"),
    material=enum("copper", "aluminium", doc="conductor material (else the `cable`'s)"),
    ampacity=q("current", "rated current of one conductor", sign=POSITIVE),
    reactance=q("impedance_per_length", "AC reactance of one conductor, e.g. `0.08 ohm/km`"),
    rectifier=ref("rectifier"), battery=ref("battery"),
    network=FieldSpec(BoolType(), doc="also supplies the switches of the fabrics attached at or "
                                      "below its owner"))))
_register(_kind("cable", "an ampacity table for a conductor type", dict(
    material=enum("copper", "aluminium"),
    areas=FieldSpec(ListType(QType("area", domain=domain("area", POSITIVE, 1.0))), required=True,
                    doc="cross-sections"),
    ampacities=FieldSpec(ListType(QType("current", domain=domain("current", POSITIVE))),
                         required=True, doc="rated current for each cross-section"))))
_register(_kind("rectifier", "a rectifier cabinet", dict(
    module=q("power", "module rating", sign=POSITIVE), modules=q("count", limit=1e6),
    redundancy=enum("n", "n_plus_1", "two_n"), efficiency=q("ratio", high=1, sign=POSITIVE),
    derate=q("ratio", high=1, sign=POSITIVE))))
_register(_kind("battery", "battery strings on a DC bus", dict(
    autonomy=q("time", required=True, sign=POSITIVE, limit=604800, why="a week"),
    chemistry=enum("lead_acid", "lithium_ion"),
    cells=q("count", low=1, limit=1e4),
    end_voltage=q("voltage", "end-of-discharge voltage per cell"),
    aging_factor=q("number", sign=POSITIVE, limit=100),
    design_factor=q("number", sign=POSITIVE, limit=100),
    temperature_factor=q("number", sign=POSITIVE, limit=100),
    efficiency=q("ratio", high=1, sign=POSITIVE),
    string_capacity=q("charge", "capacity of one string at the autonomy's discharge rate"),
    strings=q("count", "parallel strings", low=1, limit=1e6))))
_register(_kind("cooling", "the cooling system", {},
                nested=("loop", "cdu", "air", "facility"), open_members=True))
_register(_kind("fluid", "a coolant", dict(
    coolprop=FieldSpec(StrType(check_fluid_name),
                       doc="CoolProp name: `Water`, `HEOS::NAME` or `INCOMP::NAME[fraction]`"),
    concentration=q("ratio", high=1))))
_register(_kind("cdu", "a coolant distribution unit", dict(
    capacity=q("power", required=True, sign=POSITIVE), max_flow=q("flow", sign=POSITIVE),
    power=q("power", "one running CDU's own draw besides the loop's pumps"))))
_register(_kind("loop", "a liquid cooling loop", dict(
    fluid=ref("fluid", required=True), supply=q("temperature", required=True),
    rise=q("temperature_delta", required=True, sign=POSITIVE, limit=200, why="200 K"),
    cdu=ref("cdu"), cdus=q("count", limit=1e6),
    redundancy=enum("n", "n_plus_1", "two_n"), pump_head=q("pressure"),
    pump_efficiency=q("ratio", high=1, sign=POSITIVE), max_flow=q("flow", sign=POSITIVE),
    serves=ANY,
    network=FieldSpec(BoolType(), doc="also removes the cold-plate heat of the switches of the "
                                      "fabrics attached at or below its owner"))))
_register(_kind("air", "air cooling", dict(
    supply=q("temperature", required=True),
    rise=q("temperature_delta", required=True, sign=POSITIVE, limit=200, why="200 K"),
    max_rack_heat=q("power", sign=POSITIVE), fan_power_ratio=q("ratio", high=1), serves=ANY,
    ashrae_class=enum("A1", "A2", "A3", "A4",
                      doc="ASHRAE air class the cooled equipment is rated for"),
    network=FieldSpec(BoolType(), doc="also removes the heat of the switch fabrics attached at "
                                      "or below its owner"))))
_register(_kind("facility", "facility water", dict(
    water_class=enum("W17", "W27", "W32", "W40", "W45", "Wplus"), supply=q("temperature"),
    free_cooling=q("time", "hours per year of free cooling", high=8760 * 3600),
    chiller_cop=q("number", sign=POSITIVE, limit=100, least=0.5,
                  least_why="far below any chiller's, 3 to 7"),
    rejection_fan_ratio=q("ratio", "fan power of the dry coolers or cooling towers per watt of "
                                   "heat they reject", high=1))))
# Plausible bounds of a model, its parallelism and its batch: each is 100-1,000,000x the largest
# published value, far above anything real while keeping every product of counts finite (what a
# forecast may cost is Seer's own work budget, E762, tighter). Llama 3 405B has 126 layers,
# hidden 16,384, 128 heads, a 128,256-token vocabulary and 128K context (Dubey et al. 2024);
# DeepSeek-V3 256 routed experts (DeepSeek-AI 2024); GPT-3 a batch of 1,536 sequences (Brown et
# al. 2020).
MAX_LAYERS, MAX_WIDTH, MAX_HEADS = 100_000, 1 << 24, 65536
MAX_TOKENS, MAX_EXPERTS, MAX_BATCH = 1 << 30, 65536, 1 << 30
_LAYERS = "100,000 layers, 800x the largest published model"
_WIDTH = "a width of 2^24, 1,000x the largest published model"
_HEADS = "65,536 heads, 512x the largest published model"
_TOKENS = "2^30 tokens, 8,000x the longest published context"
_EXPERTS = "65,536 experts, 256x the largest published mixture"
_BATCH = "2^30 sequences per batch, 700,000x GPT-3's batch"


def _size(low=None, limit=None, why=None, required=False) -> FieldSpec:
    return q("count", required=required, low=low, limit=limit, why=why)


_register(_kind("model", "an LLM architecture", dict(
    layers=_size(required=True, low=1, limit=MAX_LAYERS, why=_LAYERS),
    hidden=_size(required=True, low=1, limit=MAX_WIDTH, why=_WIDTH),
    heads=_size(required=True, low=1, limit=MAX_HEADS, why=_HEADS),
    kv_heads=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    ffn=_size(low=1, limit=MAX_WIDTH * 8, why=_WIDTH),
    vocab=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    seq=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    experts=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS),
    top_k=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS),
    shared_experts=_size(limit=MAX_EXPERTS, why=_EXPERTS),
    moe_ffn=_size(low=1, limit=MAX_WIDTH * 8, why=_WIDTH),
    dense_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    params=q("number", "total parameters", limit=1e15, why="a quadrillion parameters"),
    activation=enum("gelu", "swiglu", "relu2",
                    doc="gelu: GPT (2 matrices, biases); swiglu: gated (3 matrices); relu2: "
                        "squared ReLU (2 matrices, Nemotron-4)"),
    head_dim=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    kv_lora_rank=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    q_lora_rank=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    rope_head_dim=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    v_head_dim=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    window=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    window_share=q("ratio", "share of the layers with sliding-window attention", high=1),
    shared_ffn=_size(low=1, limit=MAX_WIDTH * 8, why=_WIDTH),
    mamba_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    attention_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    pattern=FieldSpec(StrType(), doc="a hybrid model's layers in order, one of M (Mamba-2), * "
                      "(attention), E (MoE) or - (MLP) each (Megatron's hybrid_override_pattern)"),
    mamba_state=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    mamba_head_dim=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    mamba_groups=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    mamba_expand=q("number", "Mamba-2 inner width over hidden", sign=POSITIVE, limit=64),
    mamba_chunk=_size(low=1, limit=MAX_TOKENS, why=_TOKENS))))
_register(_kind("parallel", "parallel degrees", dict(
    tp=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    pp=_size(low=1, limit=MAX_LAYERS, why=_LAYERS),
    dp=_size(low=1, limit=1e9, why="the largest replication count"),
    cp=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    ep=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS), sp=BOOL,
    virtual_stages=_size(low=1, limit=MAX_LAYERS, why=_LAYERS),
    schedule=enum("1f1b", "interleaved", "gpipe"),
    stages=FieldSpec(ListType(QType("count", True, 0, None, domain("count", limit=MAX_LAYERS,
                                                                   why=_LAYERS)))),
    layout=FieldSpec(ListType(QType("count", True, 0, None, domain("count", limit=MAX_LAYERS,
                                                                   why=_LAYERS))),
                     doc="layers of each virtual stage in model order (pp x virtual_stages "
                         "counts): Megatron-Core's --pipeline-model-parallel-layout"),
    zero=q("count", high=3), fsdp=BOOL,
    reshard_after_forward=FieldSpec(BoolType(), doc="ZeRO-3 / FSDP: free the gathered weights "
                                    "after the forward and gather them again for the backward"),
    order=FieldSpec(StrType(), doc='rank order of the parallel dimensions, fastest first, e.g. '
                                   '"tp-cp-ep-dp-pp" (Megatron-Core\'s default)'))))
_register(_kind("batch", "batch sizes", dict(
    global_batch=_size(low=1, limit=MAX_BATCH, why=_BATCH),
    micro=_size(low=1, limit=MAX_BATCH, why=_BATCH),
    seq=_size(low=1, limit=MAX_TOKENS, why=_TOKENS))))
_register(_kind("job", "an LLM training job", dict(
    model=ref("model", required=True), placement=ANY,
    gpus=_size(low=1, limit=1e9, why="the design limit of 10^9 GPUs"),
    recompute=enum("none", "selective", "full", "auto",
                   doc="activation recomputation; `auto`: the least that fits (Seer's rule)"),
    dtype=enum("bf16", "fp16", "fp8", "fp32", "mxfp8", "nvfp4"),
    fp8_recipe=enum("delayed", "current", "rowwise", "blockwise",
                    doc="how fp8 tensors are scaled: Transformer Engine's delayed or current "
                        "per-tensor scaling, torchao's rowwise, or 128-blocks"),
    framework=enum("megatron", "torchtitan", "automodel",
                   doc="the training framework: its defaults and fusions (docs/seer.md)"),
    cuda_graphs=FieldSpec(BoolType(), doc="the step's kernels are replayed from CUDA graphs"),
    ep_overlap=FieldSpec(BoolType(), doc="the expert-parallel all-to-all of one micro-batch "
                         "overlapped with another's computation (Megatron-Core's "
                         "--overlap-moe-expert-parallel-comm)"),
    torch_compile=FieldSpec(BoolType(), doc="a PyTorch framework's step compiled by "
                            "torch.compile (its element-wise kernels fused)"),
    moe_dispatcher=enum("alltoall", "deepep", "hybridep",
                        doc="how MoE tokens reach their experts: NCCL all-to-all, or a fused "
                            "dispatcher (DeepEP, HybridEP)"),
    utilization=q("ratio", high=1), attention=enum("flash", "unfused"),
    grad_dtype=enum("fp32", "bf16", "fp16", doc="gradient buffer and reduction precision"),
    overlap_grad_reduce=BOOL, overlap_param_gather=BOOL,
    tp_overlap=enum("backward", "none", "full",
                    doc="TP reductions overlapped with the weight-gradient GEMMs, on the critical "
                        "path (Megatron-LM before 2022), or every TP collective split with the "
                        "GEMM beside it (--tp-comm-overlap, async TP)")),
    records={"parallel": "parallel", "batch": "batch"},
    root=True))
_register(_kind("scenario", "a what-if: parts failed or degraded", dict(
    required=BOOL, description=STR), statements=("check", "let", "fail", "set"), root=True))


# ---- inventory: real names, serials and asset tags (analyses/inventory.py) ----------------------
_register(_kind("columns", "the columns of an inventory file", dict(
    name=FieldSpec(StrType(), doc="the device's name (default `name`)"),
    serial=FieldSpec(StrType(), doc="its serial number (default `serial`)"),
    asset_tag=FieldSpec(StrType(), doc="its asset tag (default `asset_tag`)"),
    path=FieldSpec(StrType(), doc="the model path of the part it is (without it, a row is the "
                                  "part whose name the design's pattern gives)"))))
_register(_kind("inventory", "real devices: a CSV or NetBox JSON file bound to the design's "
                "parts", dict(
    file=FieldSpec(StrType(), required=True,
                   doc="the file, relative to the design's: a CSV with a header row, or the "
                       "JSON of NetBox's `/api/dcim/devices/`"),
    required=FieldSpec(ListType(EnumType(("host", "rack", "switch"))),
                       doc="the kinds of part that must each have a row"),
), records={"columns": "columns"}))
