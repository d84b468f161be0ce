"""The kinds of declaration and the typed fields of each.

Physical kinds have a level; an instance may contain only instances of lower levels (a host holds
GPUs, a rack holds hosts, ... a site holds halls, pods, rows or racks). Grouping kinds accept
members under any field name, so `storage_racks = 4 x StorageRack` needs no schema change; every
other field must be one the kind knows, so that a misspelt field is an error with a hint."""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple

import attrs

from astral_dsl.model.fluid_names import check_fluid_name
from astral_dsl.units import DIMENSION_TYPES


# ---- field types -----------------------------------------------------------------------------------
@attrs.frozen
class QType:
    dim: str                      # a key of DIMENSION_TYPES
    whole: bool = False           # counts
    low: Optional[float] = None   # inclusive bounds in SI units
    high: Optional[float] = None

    def describe(self) -> str:
        return {"count": "a whole number", "ratio": "a ratio such as `75 %`",
                "number": "a number"}.get(self.dim, f"a {self.dim.replace('_', ' ')} quantity")


@attrs.frozen
class BoolType:
    def describe(self) -> str:
        return "`true` or `false`"


@attrs.frozen
class StrType:
    # the domain of the string: a function returning None or (code, message, hint)
    check: Optional[Callable[[str], Optional[Tuple[str, str, str]]]] = None

    def describe(self) -> str:
        return "a string"


@attrs.frozen
class EnumType:
    values: Tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{v}`" for v in self.values)


@attrs.frozen
class RefType:
    kinds: Tuple[str, ...]

    def describe(self) -> str:
        return " or ".join(f"a {k}" for k in self.kinds)


@attrs.frozen
class ListType:
    item: object

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"


@attrs.frozen
class BundleType:
    dim: str

    def describe(self) -> str:
        return f"a bundle such as `64 x 400 Gb/s` ({self.dim})"


@attrs.frozen
class AnyType:
    def describe(self) -> str:
        return "any value"


@attrs.frozen
class FieldSpec:
    type: object
    required: bool = False
    doc: str = ""


def q(dim: str, doc: str = "", required: bool = False, low=None, high=None) -> FieldSpec:
    assert dim in DIMENSION_TYPES, dim
    whole = dim == "count"
    if dim in ("count",) and low is None:
        low = 0
    if dim == "ratio" and low is None:
        low = 0
    return FieldSpec(QType(dim, whole, low, high), required, doc)


def enum(*values: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(EnumType(tuple(values)), required, doc)


def ref(*kinds: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(RefType(tuple(kinds)), required, doc)


STR = FieldSpec(StrType())
BOOL = FieldSpec(BoolType())
ANY = FieldSpec(AnyType())


@attrs.frozen
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
_GROUPING_FIELDS = dict(_PHYS, power_limit=q("power", "maximum allowed draw"),
                        utilization=q("ratio", "average over peak load", high=1),
                        units=q("length", "height in rack units, e.g. `48 U`"))

KINDS: dict[str, KindSpec] = {}


def _register(spec: KindSpec) -> None:
    KINDS[spec.name] = spec


_register(_kind("gpu", "an accelerator", dict(
    _PHYS,
    memory=q("information", "HBM capacity"),
    memory_bandwidth=q("bandwidth", "HBM bandwidth"),
    flops_bf16=q("compute", "dense BF16 peak"),
    flops_fp16=q("compute", "dense FP16 peak"),
    flops_fp8=q("compute", "dense FP8 peak"),
    flops_fp32=q("compute", "FP32 peak"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    max_supply=q("temperature", "hottest coolant supply the cold plate accepts"),
    system_power=q("power", "peak draw of the vendor's 8-GPU server built on it (HGX/DGX)"),
    system_units=q("length", "height of that server in rack units"),
), level=0))
# pluggable form factors of network cages and modules (SFF-8665 QSFP28, QSFP56 and QSFP112; the
# QSFP-DD MSA; the OSFP MSA)
FORM_FACTORS = ("qsfp28", "qsfp56", "qsfp112", "qsfp_dd", "osfp")
_register(_kind("nic", "a network adapter", dict(
    _PHYS, ports=q("count", "network ports", low=1), port_speed=q("bandwidth", "speed per port"),
    protocol=enum("infiniband", "roce", "ethernet"),
    form_factor=enum(*FORM_FACTORS, doc="the cage of each port")), level=0))
_register(_kind("switch", "a network switch", dict(
    _PHYS, ports=q("count", "ports at `port_speed`", low=1), port_speed=q("bandwidth"),
    capacity=q("bandwidth", "switching capacity"), max_ports=q("count", "ports with breakout"),
    protocol=enum("infiniband", "roce", "ethernet"), units=q("length"),
    form_factor=enum(*FORM_FACTORS, doc="the cage type of its ports"),
    cages=q("count", "front-panel cages (a twin-port OSFP cage holds two ports)", low=1)),
    level=0))
_register(_kind("cpu", "a host processor", dict(_PHYS, cores=q("count")), level=0))
_register(_kind("host", "a server", dict(
    _PHYS, units=q("length", "height in rack units"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    idle_power=q("power", "not used by any analysis (an error, E630)")), level=1,
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
    rails=q("count", "rails (GPU i of each host -> rail i)", low=1),
    planes=q("count", "planes (NIC port j -> plane j)", low=1),
    dual_homing=BOOL,
    max_oversubscription=q("number", "largest down/up ratio allowed at any tier"),
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
)))
_register(_kind("medium", "a link medium: copper cable or optics", dict(
    type=enum("dac", "acc", "aec", "aoc", "optics", required=True,
              doc="passive copper, active copper, active electrical, active optical cable, or "
                  "pluggable optics with fibre"),
    reach=q("length", "the longest link the medium is specified for", required=True, low=0),
    speed=q("bandwidth", "the speed of one link"),
    form_factor=enum(*FORM_FACTORS, doc="module or connector at the upper end (the tier's "
                                        "switch)"),
    ports=q("count", "links one module or connector carries at the upper end: 2 for a "
                     "twin-port module, 2 or 4 for a breakout", low=1),
    power=q("power", "power of one module at the upper end"),
    lower_form_factor=enum(*FORM_FACTORS, doc="at the lower end (NIC or lower switch); "
                                              "default: `form_factor`"),
    lower_ports=q("count", "links per module or connector at the lower end; default 1",
                  low=1),
    lower_power=q("power", "power of one module at the lower end; default: `power` when "
                           "`lower_ports` equals `ports`"),
)))
_register(_kind("power", "the electrical system", {},
                nested=("feeder", "rectifier", "battery", "standard", "cable"),
                open_members=True))
_register(_kind("standard", "a voltage standard and its normal range", dict(
    nominal=q("voltage", required=True), min=q("voltage"), max=q("voltage"),
    current=enum("dc", "ac"))))
_register(_kind("feeder", "a power feed (HVDC or AC)", dict(
    current=enum("dc", "ac", required=True), voltage=q("voltage", required=True),
    capacity=q("power", "rated power"), phases=q("count", low=1, high=3),
    power_factor=q("ratio", high=1), side=enum("A", "B"), serves=ANY,
    standard=ref("standard"), efficiency=q("ratio", "conversion efficiency", high=1),
    conductor_area=q("area"), length=q("length"), conductor_temperature=q("temperature"),
    max_voltage_drop=q("ratio", high=1), count=q("count", "how many such feeders", low=1),
    conductors=q("count", "parallel conductor sets", low=1), cable=ref("cable"),
    material=enum("copper", "aluminium", doc="conductor material (else the `cable`'s)"),
    ampacity=q("current", "rated current of one conductor"),
    reactance=q("impedance_per_length", "AC reactance of one conductor, e.g. `0.08 ohm/km`"),
    rectifier=ref("rectifier"), battery=ref("battery"))))
_register(_kind("cable", "an ampacity table for a conductor type", dict(
    material=enum("copper", "aluminium"),
    areas=FieldSpec(ListType(QType("area")), required=True, doc="cross-sections"),
    ampacities=FieldSpec(ListType(QType("current")), required=True,
                         doc="rated current for each cross-section"))))
_register(_kind("rectifier", "a rectifier cabinet", dict(
    module=q("power", "module rating"), modules=q("count"),
    redundancy=enum("n", "n_plus_1", "two_n"), efficiency=q("ratio", high=1),
    derate=q("ratio", high=1))))
_register(_kind("battery", "battery strings on a DC bus", dict(
    autonomy=q("time", required=True), chemistry=enum("lead_acid", "lithium_ion"),
    cells=q("count", low=1), end_voltage=q("voltage", "end-of-discharge voltage per cell"),
    aging_factor=q("number"), design_factor=q("number"), temperature_factor=q("number"),
    efficiency=q("ratio", high=1),
    string_capacity=q("charge", "capacity of one string at the autonomy's discharge rate"),
    strings=q("count", "parallel strings", low=1))))
_register(_kind("cooling", "the cooling system", {},
                nested=("loop", "cdu", "air", "facility"), open_members=True))
_register(_kind("fluid", "a coolant", dict(
    coolprop=FieldSpec(StrType(check_fluid_name),
                       doc="CoolProp name: `Water`, `HEOS::NAME` or `INCOMP::NAME[fraction]`"),
    concentration=q("ratio", high=1))))
_register(_kind("cdu", "a coolant distribution unit", dict(
    capacity=q("power", required=True), max_flow=q("flow"),
    power=q("power", "one running CDU's own draw besides the loop's pumps"))))
_register(_kind("loop", "a liquid cooling loop", dict(
    fluid=ref("fluid", required=True), supply=q("temperature", required=True),
    rise=q("temperature_delta", required=True), cdu=ref("cdu"), cdus=q("count"),
    redundancy=enum("n", "n_plus_1", "two_n"), pump_head=q("pressure"),
    pump_efficiency=q("ratio", high=1), max_flow=q("flow"), serves=ANY)))
_register(_kind("air", "air cooling", dict(
    supply=q("temperature", required=True), rise=q("temperature_delta", required=True),
    max_rack_heat=q("power"), fan_power_ratio=q("ratio"), serves=ANY,
    ashrae_class=enum("A1", "A2", "A3", "A4",
                      doc="ASHRAE air class the cooled equipment is rated for"),
    network=FieldSpec(BoolType(), doc="also removes the heat of the switch fabrics attached at "
                                      "or below its owner"))))
_register(_kind("facility", "facility water", dict(
    water_class=enum("W17", "W27", "W32", "W40", "W45", "Wplus"), supply=q("temperature"),
    free_cooling=q("time", "hours per year of free cooling"), chiller_cop=q("number"))))
_register(_kind("model", "an LLM architecture", dict(
    layers=q("count", required=True, low=1), hidden=q("count", required=True, low=1),
    heads=q("count", required=True, low=1), kv_heads=q("count", low=1), ffn=q("count", low=1),
    vocab=q("count", low=1), seq=q("count", low=1), experts=q("count", low=1),
    top_k=q("count", low=1), shared_experts=q("count"), moe_ffn=q("count", low=1),
    dense_layers=q("count"), params=q("number", "total parameters"),
    activation=enum("gelu", "swiglu"))))
_register(_kind("parallel", "parallel degrees", dict(
    tp=q("count", low=1), pp=q("count", low=1), dp=q("count", low=1), cp=q("count", low=1),
    ep=q("count", low=1), sp=BOOL, virtual_stages=q("count", low=1),
    schedule=enum("1f1b", "interleaved", "gpipe"),
    stages=FieldSpec(ListType(QType("count", True, 0))), zero=q("count", high=3), fsdp=BOOL,
    reshard_after_forward=FieldSpec(BoolType(), doc="ZeRO-3 / FSDP: free the gathered weights "
                                    "after the forward and gather them again for the backward"),
    order=FieldSpec(StrType(), doc='rank order of the parallel dimensions, fastest first, e.g. '
                                   '"tp-cp-ep-dp-pp" (Megatron-Core\'s default)'))))
_register(_kind("batch", "batch sizes", dict(
    global_batch=q("count", low=1), micro=q("count", low=1), seq=q("count", low=1))))
_register(_kind("job", "an LLM training job", dict(
    model=ref("model", required=True), placement=ANY, gpus=q("count", low=1),
    recompute=enum("none", "selective", "full"), dtype=enum("bf16", "fp16", "fp8", "fp32"),
    utilization=q("ratio", high=1), attention=enum("flash", "unfused"),
    grad_dtype=enum("fp32", "bf16", "fp16", doc="gradient buffer and reduction precision"),
    overlap_grad_reduce=BOOL, overlap_param_gather=BOOL,
    tp_overlap=enum("backward", "none", doc="TP reductions overlapped with the weight-gradient "
                    "GEMMs, or on the critical path (Megatron-LM before 2022)")),
    records={"parallel": "parallel", "batch": "batch"},
    root=True))
_register(_kind("scenario", "a what-if: parts failed or degraded", dict(
    required=BOOL, description=STR), statements=("check", "let", "fail", "set"), root=True))
