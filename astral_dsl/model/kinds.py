"""The kinds of declaration and the typed fields of each.

Physical kinds have a level; an instance may contain only instances of lower levels (a host holds
GPUs, a rack holds hosts, ... a site holds halls, pods, rows or racks). Grouping kinds accept
members under any field name, so `storage_racks = 4 x StorageRack` needs no schema change; every
other field must be one the kind knows, so that a misspelt field is an error with a hint."""
from __future__ import annotations

from astral_dsl.model.domains import POSITIVE, domain
from astral_dsl.model.fieldtypes import (ANY, BOOL, GROUPING_FIELDS, NAME, PHYS, STR, AnyType,
                                         BoolType, BundleType, EnumType, FieldSpec, KindSpec,
                                         ListType, QType, RefType, StrType, enum, make_kind, q,
                                         ref)
from astral_dsl.model.names import check_pattern
from astral_dsl.model.plant_kinds import SITE_FIELDS, plant_kinds

__all__ = ["ANY", "BOOL", "STR", "AnyType", "BoolType", "BundleType", "EnumType", "FieldSpec",
           "KINDS", "KindSpec", "ListType", "QType", "RefType", "StrType", "enum", "q", "ref"]


KINDS: dict[str, KindSpec] = {}


def _register(spec: KindSpec) -> None:
    KINDS[spec.name] = spec


_register(make_kind("gpu", "an accelerator", dict(
    PHYS,
    memory=q("information", "HBM capacity", sign=POSITIVE, limit=8e15,
             why="1 PB of memory on one device", least=8e9,
             least_why="1 GB, below any datacenter accelerator's (NVIDIA's L4 holds 24 GB, "
                       "Google's first TPU 8 GiB)"),
    memory_bandwidth=q("bandwidth", "HBM bandwidth"),
    flops_bf16=q("compute", "dense BF16 peak"),
    flops_fp16=q("compute", "dense FP16 peak"),
    flops_fp8=q("compute", "dense FP8 peak (also MXFP8's)"),
    flops_fp4=q("compute", "dense FP4 peak (NVFP4 / MXFP4)"),
    flops_fp32=q("compute", "FP32 peak"),
    flops_power=q("power", "board power at which the peak FLOP/s are quoted: a lower `power` "
                           "caps the clocks (default: the declaration's `power`, which a "
                           "scenario's `set` of `power` does not move: that is a cap)",
                  sign=POSITIVE),
    sms=q("count", "streaming multiprocessors (the units a GEMM's tiles are spread over)", low=1,
          limit=65536, why="65,536 SMs, far above any GPU"),
    architecture=enum("ampere", "hopper", "blackwell", "other",
                      doc="the GPU generation: how far its sustained clocks fall below the "
                          "quoted peak's (a fitted factor per generation; not stated: "
                          "Ampere's, with W752)"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    host_bandwidth=q("bandwidth", "the GPU's link to host memory, each direction (PCIe, "
                                  "NVLink-C2C): what activation offloading moves over"),
    max_supply=q("temperature", "hottest coolant supply the cold plate accepts"),
    system_power=q("power", "peak draw of the vendor's 8-GPU server built on it (HGX/DGX)"),
    system_units=q("length", "height of that server in rack units"),
), level=0))
# pluggable form factors of network cages and modules (SFF-8665 QSFP28, QSFP56 and QSFP112; the
# QSFP-DD MSA; the OSFP MSA)
FORM_FACTORS = ("qsfp28", "qsfp56", "qsfp112", "qsfp_dd", "osfp")
_register(make_kind("nic", "a network adapter", dict(
    PHYS, ports=q("count", "network ports", low=1, limit=64, why="64 ports on one adapter"),
    port_speed=q("bandwidth", "speed per port"),
    protocol=enum("infiniband", "roce", "ethernet"),
    form_factor=enum(*FORM_FACTORS, doc="the cage of each port"),
    name=FieldSpec(StrType(check_pattern), doc="the interface name of each port, e.g. "
                                               "`\"eth{nic}\"` or `\"ib{nic}p{port}\"`")),
    level=0))
_register(make_kind("switch", "a network switch", dict(
    PHYS, ports=q("count", "ports at `port_speed`", low=1, limit=65536,
                   why="65,536 ports, far above any switch radix"),
    port_speed=q("bandwidth"),
    capacity=q("bandwidth", "switching capacity"),
    max_ports=q("count", "ports with breakout", limit=65536, why="65,536 ports"),
    protocol=enum("infiniband", "roce", "ethernet"), units=q("length"),
    form_factor=enum(*FORM_FACTORS, doc="the cage type of its ports"),
    cages=q("count", "front-panel cages (a twin-port OSFP cage holds two ports)", low=1,
            limit=65536, why="65,536 cages")), level=0))
_register(make_kind("cpu", "a host processor", dict(PHYS, cores=q("count", limit=1e6)), level=0))
_register(make_kind("host", "a server", dict(
    PHYS, units=q("length", "height in rack units"),
    nvlink_bandwidth=q("bandwidth", "NVLink bandwidth per GPU, each direction"),
    nvlink_domain=enum("host", "rack", doc="the GPUs one NVLink domain joins: the host's own, or "
                       "every GPU of its rack (NVLink switch trays: GB200 NVL72)"),
    memory=q("information", "system memory (DDR, LPDDR) its GPUs offload activations to",
             limit=8e15, why="1 PB of memory in one server"),
    idle_power=q("power", "not used by any analysis (an error, E630)"), name=NAME), level=1,
    open_members=True))
_register(make_kind("rack", "a rack of hosts", dict(
    GROUPING_FIELDS, feeds=FieldSpec(ListType(RefType(("feeder",))),
                                      doc="the feeders that supply it (A/B)"),
    loop=ref("loop", doc="the liquid loop that cools it"),
    width=q("length", "mounting width, nominal: `19 inch` (EIA-310-E), `21 inch` (Open Rack), "
                      "`23 inch` or `10 inch`")), level=2, open_members=True))
for _name, _level, _doc in (("row", 3, "a row (block) of racks"), ("block", 3, "a block of racks"),
                            ("pod", 4, "a pod"), ("hall", 5, "a data hall"),
                            ("site", 6, "a site: the design's root")):
    _fields = dict(GROUPING_FIELDS, **(SITE_FIELDS if _name == "site" else {}))
    _register(make_kind(_name, _doc, _fields, level=_level, open_members=True,
                        root=_name == "site",
                        nested=("fabric", "power", "cooling", "feeder", "loop", "air",
                                "facility", "transformer")))

_register(make_kind("fabric", "the network: rails, planes and switch tiers", dict(
    rails=q("count", "rails (GPU i of each host -> rail i)", low=1, limit=1024,
            why="1,024 rails: one per GPU of a host"),
    planes=q("count", "planes (NIC port j -> plane j)", low=1, limit=64,
             why="64 planes: one per port of a NIC"),
    dual_homing=BOOL,
    max_oversubscription=q("number", "largest down/up ratio allowed at any tier",
                           sign=POSITIVE, limit=1e3),
), nested=("tier",)))
_register(make_kind("tier", "a switch tier", dict(
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
_register(make_kind("medium", "a link medium: copper cable or optics", dict(
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
for _spec in plant_kinds():
    _register(_spec)
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


_register(make_kind("model", "an LLM architecture", dict(
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
    activation_clamp=q("number", "a gated activation's inputs clamped to this magnitude "
                       "(GPT-OSS: 7; Megatron-Core's activation_func_clamp_value)", sign=POSITIVE,
                       limit=1e6),
    expert_bias=FieldSpec(BoolType(), doc="the experts' linear layers have biases (GPT-OSS; "
                          "Megatron-Core's add_bias_linear)"),
    yarn_factor=q("number", "YaRN's RoPE scaling factor (GPT-OSS: 32), with its default attention "
                  "factor 0.1 ln(factor) + 1 on the rotary embeddings", low=1, limit=1e6,
                  why="a million times the trained context"),
    qk_norm=enum("none", "rms", "l2",
                 doc="a norm on the attention's queries and keys after their projection: "
                     "rms (Qwen3: Megatron-Core's qk_layernorm, Transformer Engine's RMSNorm), "
                     "l2 (Llama 4: qk_l2_norm); default none"),
    nope_every=q("count", "every this many layers one without rotary embeddings nor the query-key "
                 "norm, the last of each run (Llama 4: 4; NeMo 2.4.0 llama4_utils.py "
                 "is_nope_layer); not stated: every layer has them", low=1, limit=MAX_LAYERS,
                 why=_LAYERS),
    expert_groups=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS),
    group_top_k=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS),
    router_score=enum("softmax", "sigmoid",
                      doc="an MoE router's scores: softmax over the top k (Megatron-Core's "
                          "default), or DeepSeek-V3's sigmoid scores with the expert bias for "
                          "selection, normalised over the top k and scaled (docs/seer.md)"),
    aux_loss=enum("none", "aux_loss", "seq_aux_loss", "global_aux_loss",
                  doc="an MoE router's load-balancing loss (Megatron-Core's "
                      "moe_router_load_balancing_type with a coefficient above 0); default "
                      "none"),
    mtp_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    mtp_pattern=FieldSpec(StrType(), doc="a hybrid model's MTP depth as a block of layers, one "
                          "of M, *, E or - each (Megatron's mtp_hybrid_override_pattern; "
                          "Nemotron 3.5 Lightning: \"*E\"); not stated: one layer like the "
                          "model's last"),
    mtp_shared=FieldSpec(BoolType(), doc="the MTP depths run one set of weights (Megatron-Core's "
                         "mtp_use_repeated_layer): held, reduced and stepped once, computed per "
                         "depth"),
    shared_ffn=_size(low=1, limit=MAX_WIDTH * 8, why=_WIDTH),
    mamba_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    attention_layers=_size(limit=MAX_LAYERS, why=_LAYERS),
    pattern=FieldSpec(StrType(), doc="a hybrid model's layers in order, one of M (Mamba-2), * "
                      "(attention), E (MoE) or - (MLP) each (Megatron's hybrid_override_pattern)"),
    mamba_state=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    mamba_head_dim=_size(low=1, limit=MAX_WIDTH, why=_WIDTH),
    mamba_groups=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    mamba_expand=q("number", "Mamba-2 inner width over hidden", sign=POSITIVE, limit=64),
    mamba_heads=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    mamba_chunk=_size(low=1, limit=MAX_TOKENS, why=_TOKENS))))
_register(make_kind("parallel", "parallel degrees", dict(
    tp=_size(low=1, limit=MAX_HEADS, why=_HEADS),
    pp=_size(low=1, limit=MAX_LAYERS, why=_LAYERS),
    dp=_size(low=1, limit=1e9, why="the largest replication count"),
    cp=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    ep=_size(low=1, limit=MAX_EXPERTS, why=_EXPERTS), sp=BOOL,
    etp=FieldSpec(QType("count", True, 1, None, domain("count", limit=MAX_HEADS, why=_HEADS)),
                  doc="expert tensor parallelism: each routed expert's weights split over this "
                      "many ranks (Megatron-Core's --expert-tensor-parallel-size); default 1"),
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
_register(make_kind("batch", "batch sizes", dict(
    global_batch=_size(low=1, limit=MAX_BATCH, why=_BATCH),
    micro=_size(low=1, limit=MAX_BATCH, why=_BATCH),
    seq=_size(low=1, limit=MAX_TOKENS, why=_TOKENS),
    pipeline_runs=FieldSpec(QType("count", True, 1, None, domain("count", limit=MAX_BATCH,
                                                                why=_BATCH)),
                            doc="times the pipeline schedule runs in a step, each over an equal "
                                "share of the micro-batches (NeMo AutoModel with a pipeline "
                                "runs it once per gradient-accumulation step: its local batch "
                                "over its micro-batch is a run's micro-batches); default 1"))))
# what `recompute = modules` may recompute (recompute_modules; seer/spec.py JobSpec.recomputed)
RECOMPUTE_MODULES = ("layernorm", "activation", "moe_act", "mla_up_proj", "mlp")
_register(make_kind("job", "an LLM training job", dict(
    model=ref("model", required=True), placement=ANY,
    gpus=_size(low=1, limit=1e9, why="the design limit of 10^9 GPUs"),
    hosts_per_rack=q("count", low=1, limit=1e9, why="the design limit of 10^9 GPUs",
                     doc="the job takes the first N hosts of each rack of its placement, in "
                         "the design's order, and leaves the rest (a GB200 NVL72 job on 16 of "
                         "each rack's 18 trays); without it, every host in order"),
    recompute=enum("none", "selective", "modules", "full", "auto",
                   doc="activation recomputation: the attention core (selective), the norms and "
                       "activation functions (modules: Megatron-Core's --recompute-modules "
                       "layernorm moe_act mlp-act, PyTorch's operator-level checkpointing), "
                       "whole layers (full); `auto`: the least that fits (Seer's rule)"),
    recompute_modules=FieldSpec(
        ListType(EnumType(RECOMPUTE_MODULES)),
        doc="with `recompute = modules`: which (Megatron-Core's --recompute-modules): the norms "
            "(layernorm), the dense MLP's activation function (activation), the experts' "
            "(moe_act), multi-head latent attention's up-projections, whose queries, keys and "
            "values are then not kept (mla_up_proj), a dense layer's whole MLP with its TP "
            "collectives (mlp). Without it: layernorm, activation, moe_act"),
    recompute_layers=q("count", low=1, limit=MAX_LAYERS, why=_LAYERS,
                     doc="with `recompute = full`: the layers of each model chunk "
                         "recomputed whole, its first N (Megatron-LM's --recompute-method "
                         "block --recompute-num-layers); the others keep their "
                         "activations. Without it every layer; with `recompute = auto` "
                         "Seer's rule may choose a count"),
    offload_layers=q("count", limit=MAX_LAYERS, why=_LAYERS,
                     doc="layers whose activations are offloaded to host memory between "
                         "their forward and backward (Megatron-Core's "
                         "--cpu-offloading-num-layers; pp = 1); with `recompute = auto` "
                         "and no count, Seer's rule may choose one"),
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
    pp_overlap=FieldSpec(BoolType(), doc="an interleaved pipeline's sends overlapped with "
                         "the next block, the sender waiting only for its previous send "
                         "(Megatron-Core's overlap_p2p_comm)"),
    torch_compile=FieldSpec(BoolType(), doc="a PyTorch framework's step compiled by "
                            "torch.compile (its element-wise kernels fused)"),
    fp8_params=FieldSpec(BoolType(), doc="with a quantised dtype: the linear layers' weights "
                         "kept in the quantised format only, no 16-bit copy (Megatron-Core's "
                         "--fp8-param-gather); per-tensor fp8 weights gathered quantised"),
    capacity_factor=q("ratio", sign=POSITIVE, limit=MAX_EXPERTS, why=_EXPERTS, least=0.01,
                      least_why="an expert taking 1 % of its share drops nearly every token",
                      doc="MoE token dropping: each expert takes at most this factor times "
                          "its even share of the routed tokens (Megatron-Core's "
                          "--moe-expert-capacity-factor); not stated: dropless"),
    pad_to_capacity=FieldSpec(BoolType(), doc="with capacity_factor: every expert's input "
                              "padded to its capacity, so that no token counts go to the "
                              "host (Megatron-Core's --moe-pad-expert-input-to-capacity)"),
    grouped_gemm=FieldSpec(BoolType(), doc="a MoE layer's local experts run as one grouped "
                           "GEMM (the default); false: each expert's GEMMs of its own, one "
                           "expert after another (Megatron-Core without --moe-grouped-gemm: "
                           "SequentialMLP)"),
    permute_fusion=FieldSpec(BoolType(), doc="an MoE layer's token permutation and "
                             "unpermutation as Transformer Engine's fused kernels (the default, "
                             "as Seer prices the recipes' rows); false: Megatron-Core's unfused "
                             "PyTorch path (moe_permute_fusion = False: NeMo 2.x's Llama 4 and "
                             "Mixtral)"),
    rope_fusion=FieldSpec(BoolType(), doc="rotary embeddings as Transformer Engine's fused "
                          "kernel (the default, as Seer prices the recipes' rows, but for a "
                          "YaRN model, whose attention factor Megatron-Core 0.16 applies in its "
                          "unfused RoPE); stated true: the fused kernel under YaRN too, as "
                          "Megatron-Core before 0.16 runs it; false: Megatron-Core's unfused "
                          "PyTorch RoPE (apply_rope_fusion = False: NeMo 2.x's Llama 4)"),
    router_fusion=FieldSpec(BoolType(), doc="an MoE router's score, top-k and "
                            "load-balancing-loss kernels as Transformer Engine's fused ones "
                            "(Megatron-Core's --moe-router-fusion); default false, "
                            "Megatron-Core's PyTorch path"),
    scale_swizzle=FieldSpec(BoolType(), doc="each MXFP8 or NVFP4 GEMM's block scales "
                            "swizzled into cuBLAS's layout by a kernel per operand before it "
                            "(Transformer Engine before 2.12, whose quantisers write them in "
                            "their compact layout); default false"),
    cross_entropy=enum("te", "native",
                       doc="the head's cross-entropy kernels: Transformer Engine's Triton "
                           "ones (Megatron-Core's --cross-entropy-fusion-impl te) or "
                           "Megatron-Core's fused fp32 ones (native); not stated: Seer's "
                           "generic count"),
    attention_precision=enum("bf16", "fp8",
                             doc="the precision of fused attention: bf16, or fp8 as Transformer "
                                 "Engine's MXFP8 attention under an MXFP8 job (Megatron-Core's "
                                 "--fp8-dot-product-attention: cuDNN's MXFP8 SDPA on Blackwell, "
                                 "the queries, keys, values and output gradient quantised); "
                                 "default bf16"),
    head_precision=enum("bf16", "fp8",
                        doc="the precision of the output layer (the logits GEMMs): bf16, or "
                            "fp8 as Transformer Engine's MXFP8 linear layer under an MXFP8 "
                            "job (Megatron-Core's --fp8-output-proj: its input and output "
                            "gradient quantised); default bf16"),
    moe_routing=enum("topk", "round_robin",
                     doc="which experts an MoE layer's tokens go to: the router's top-k (at "
                         "random, balanced; within the model's expert groups), or k "
                         "consecutive experts per token (NeMo AutoModel's fake balanced gate)"),
    moe_dispatcher=enum("alltoall", "deepep", "hybridep",
                        doc="how MoE tokens reach their experts: NCCL all-to-all, or a fused "
                            "dispatcher (DeepEP, HybridEP)"),
    utilization=q("ratio", high=1),
    attention=enum("flash", "flash2", "unfused",
                   doc="fused attention (Transformer Engine's: FlashAttention-3-class on "
                       "Hopper), FlashAttention-2's kernels, or the score matrix materialised"),
    grad_dtype=enum("fp32", "bf16", "fp16", doc="gradient buffer and reduction precision"),
    optimizer_dtype=enum("fp32", "bf16",
                         doc="precision of Adam's moments and of the gradients the step "
                             "works on (fp32 master weights either way): bf16 is Megatron-Core's "
                             "precision-aware optimizer as DeepSeek-V3's recipe sets it"),
    overlap_grad_reduce=BOOL, overlap_param_gather=BOOL,
    tp_overlap=enum("backward", "none", "full",
                    doc="TP reductions overlapped with the weight-gradient GEMMs, on the critical "
                        "path (Megatron-LM before 2022), or every TP collective split with the "
                        "GEMM beside it (--tp-comm-overlap, async TP)")),
    records={"parallel": "parallel", "batch": "batch"},
    root=True))
_register(make_kind("scenario", "a what-if: parts failed or degraded", dict(
    required=BOOL, description=STR), statements=("check", "let", "fail", "set"), root=True))


# ---- inventory: real names, serials and asset tags (analyses/inventory.py) ----------------------
_register(make_kind("columns", "the columns of an inventory file", dict(
    name=FieldSpec(StrType(), doc="the device's name (default `name`)"),
    serial=FieldSpec(StrType(), doc="its serial number (default `serial`)"),
    asset_tag=FieldSpec(StrType(), doc="its asset tag (default `asset_tag`)"),
    path=FieldSpec(StrType(), doc="the model path of the part it is (without it, a row is the "
                                  "part whose name the design's pattern gives)"))))
_register(make_kind("inventory", "real devices: a CSV or NetBox JSON file bound to the design's "
                    "parts", dict(
    file=FieldSpec(StrType(), required=True,
                   doc="the file, relative to the design's: a CSV with a header row, or the "
                       "JSON of NetBox's `/api/dcim/devices/`"),
    required=FieldSpec(ListType(EnumType(("host", "rack", "switch"))),
                       doc="the kinds of part that must each have a row"),
), records={"columns": "columns"}))
