"""The parallel configurations a job admits (`astral search`), and the rules that reject some.

For each GPU count (the job's `gpus`, else its placement's; `--gpus` for others), every
combination of

- tp, cp, pp among the divisors of the GPU count, dp = GPUs / (tp x cp x pp), cp only where the
  sequence splits into 2 x cp chunks of at least a FlashAttention tile (seer/validate_layout.py
  cp_split: E756, W760);
- ep among the divisors of tp x dp x cp (mixture-of-experts models only);
- the micro-batch among the divisors of the global batch;
- the virtual stages (model chunks) of the interleaved schedule: 1, or for pp > 1 a divisor of
  the layers every stage holds;
- recomputation: none, full, and selective only with unfused attention (with fused attention it
  keeps what `none` keeps: seer/memory.py, seer/lower.py);
- ZeRO stage 0 to 3, sharded stages only where there are data-parallel ranks (dp x cp > 1) to
  shard over,

is enumerated; the rules below reject what a forecast (seer/validate.py, each with its code) or
Megatron-LM would. A pp that does not divide the layers gets the most even split, its extra
layers on the middle stages (the first and last also hold the embedding and the head), as
`stages` would declare it. Everything else (sp, dtype, attention, overlaps, rank order, the
global batch and the sequence) stays as the job declares it."""
from __future__ import annotations

import math
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses import rank_order
from astral_dsl.seer import budget
from astral_dsl.seer.spec import JobSpec
from astral_dsl.seer.stages import divisors
from astral_dsl.seer.validate_layout import cp_split

ZERO = (0, 1, 2, 3)
# The most configurations a search admits (after the rules below) before it screens any: about
# ten times the largest single GPU count of the examples (50,536 for examples/explore.astral's
# 4,096 GPUs, 26,568 for the 524,288-GPU reference job); beyond it the search says so (E803)
# rather than running for hours, and the configurations' list stays within ~100 MB.
MAX_CONFIGS = 500_000

# why a configuration is rejected: (code, text)
RULES: Dict[str, Tuple[str, str]] = {
    "tp_heads": ("E750", "tp does not divide the attention heads (or the key/value heads)"),
    "pp_layers": ("E751", "more pipeline stages than layers"),
    "ep": ("E753", "ep does not divide the experts, or ep x etp does not divide tp x dp x cp"),
    "batch": ("E756", "the global batch is not divisible by micro-batch x dp (x pipeline_runs)"),
    "seq_cp": ("E756", "the sequence is not divisible by 2 x cp (Transformer Engine's "
                       "load-balanced split)"),
    "cp_tile": ("W760", "a context-parallel chunk (sequence / 2 cp) under a FlashAttention "
                        "tile of 128 tokens"),
    "order": ("E759", "the declared rank order leaves out a dimension larger than 1, or puts "
                       "pp before a dimension where the experts' grid does not match the dense one"),
    "reshard": ("E761", "reshard_after_forward is declared: only ZeRO-3 applies"),
    "budget": ("E762", "beyond Seer's work budget (pipeline blocks or tokens per micro-batch)"),
    "cp_attention": ("E764", "context parallelism needs fused attention"),
    "offload_pp": ("E768", "offload_layers is declared: offloading needs one pipeline stage"),
    "interleave": ("", "interleaving needs micro-batches divisible by pp (Megatron-LM, W757)"),
}


@records.frozen(order=True)
class Config:
    """One parallel configuration. Ordered (for ties) by its fields in this order."""
    gpus: int
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    v: int                                    # virtual stages (model chunks) per device
    micro: int
    recompute: str
    zero: int
    stages: Optional[Tuple[int, ...]] = None  # an uneven split of the layers over pp

    def options(self, space: "Space") -> Dict[str, object]:
        """The job fields of this configuration (seer.forecast's options)."""
        schedule = "interleaved" if self.v > 1 else (
            space.schedule if space.schedule != "interleaved" else "1f1b")
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "cp": self.cp, "ep": self.ep,
                "virtual_stages": self.v, "schedule": schedule, "micro": self.micro,
                "recompute": self.recompute, "zero": self.zero,
                "fsdp": self.zero == 3 if space.fsdp_declared else None,
                "stages": self.stages, "global_batch": space.batch}

    def spec(self, space: "Space") -> JobSpec:
        """The JobSpec Seer forecasts for this configuration."""
        o = self.options(space)
        par = attrs.evolve(space.base.parallel, tp=self.tp, pp=self.pp, dp=self.dp, cp=self.cp,
                           ep=self.ep, v=self.v, schedule=o["schedule"], zero=self.zero,
                           stages=self.stages)
        # offloading as declared (a count), else none here: where a configuration does not
        # fit without it, the search offloads the fewest layers that fit (work.fitting)
        return space.base.with_(parallel=par, micro=self.micro, recompute=self.recompute,
                                global_batch=space.batch, gpus=self.gpus,
                                offload_layers=space.base.offload_layers or 0)

    def label(self) -> str:
        dims = [f"tp{self.tp}", f"pp{self.pp}", f"dp{self.dp}"] + \
            [f"{k}{v}" for k, v in (("cp", self.cp), ("ep", self.ep)) if v > 1] + \
            ([f"v{self.v}"] if self.v > 1 else [])
        return " ".join(dims + [f"mb{self.micro}", self.recompute, f"zero{self.zero}"])

    def group(self) -> "Config":
        """The configuration with the micro-batch left out."""
        return attrs.evolve(self, micro=0)

    def family(self) -> "Config":
        """The configuration with the micro-batch and the ZeRO stage left out (made directly:
        attrs.evolve reads the class's fields at every call, 2.4 us a copy to 0.9, once per
        configuration a search screens)."""
        return Config(self.gpus, self.tp, self.pp, self.dp, self.cp, self.ep, self.v, 0,
                      self.recompute, 0, self.stages)


@records.frozen
class Space:
    base: JobSpec                   # the job as declared (its model, batch, runtime fields)
    gpus: Tuple[int, ...]           # the GPU counts to split
    batch: int                      # the global batch every configuration keeps
    recompute: Tuple[str, ...]
    schedule: str                   # the declared schedule (1f1b, interleaved or gpipe)
    fsdp_declared: bool = False
    reshard_declared: bool = False
    order_declared: Tuple[str, ...] = ()
    offload_declared: bool = False  # the job states `offload_layers`: kept, never searched

    @classmethod
    def of(cls, spec: JobSpec, gpus: Sequence[int], declared: Dict[str, object]) -> "Space":
        """`declared`: the job's stated fields (seer.job.declared)."""
        rec = ("none", "selective", "full") if spec.attention == "unfused" else ("none", "full")
        order = tuple(spec.parallel.order) if declared.get("order") else ()
        return cls(spec, tuple(gpus), spec.global_batch, rec, spec.parallel.schedule,
                   "fsdp" in declared, "reshard_after_forward" in declared, order,
                   "offload_layers" in declared)


class TooLarge(Exception):
    """More than MAX_CONFIGS admitted configurations: `counts` the GPU counts enumerated when
    the budget ran out, of `of`."""

    def __init__(self, counts: int, of: int):
        super().__init__(f"more than {MAX_CONFIGS:,} configurations to search")
        self.counts, self.of = counts, of


@records.frozen
class Counts:
    """How many configurations were enumerated, and why those rejected were."""
    enumerated: int
    rejected: Tuple[Tuple[str, int], ...]     # (rule, count), in RULES order
    admitted: int

    def to_json(self) -> Dict[str, object]:
        return {"enumerated": self.enumerated, "admitted": self.admitted,
                "rejected": [{"rule": r, "code": RULES[r][0] or None, "why": RULES[r][1],
                              "count": n} for r, n in self.rejected]}


def split(layers: int, pp: int) -> Optional[Tuple[int, ...]]:
    """None for an even split; else the most even one, extra layers on the middle stages."""
    if layers % pp == 0:
        return None
    base, extra = divmod(layers, pp)
    stages = [base] * pp
    middle = list(range(1, pp - 1)) + [0, pp - 1]
    for i in middle[:extra]:
        stages[i] += 1
    return tuple(stages)


def _chunk_options(layers: int, pp: int, stages: Optional[Tuple[int, ...]]) -> List[int]:
    """Virtual stages a stage split admits: 1, or for pp > 1 a divisor of every stage's
    layers (and of the few layers of the smallest)."""
    if pp == 1:
        return [1]
    if stages is None:
        return divisors(layers // pp)
    return divisors(math.gcd(*stages))


def enumerate_space(space: Space) -> Tuple[List[Config], Counts]:
    """The admitted configurations (in a fixed order) and the counts of the rest; TooLarge
    beyond MAX_CONFIGS admitted."""
    m = space.base.model
    rejected = {r: 0 for r in RULES}
    out: List[Config] = []
    micros_all = divisors(space.batch)
    enumerated = 0
    for k, n in enumerate(space.gpus):
        for tp, cp, pp, dp, ep in _layouts(n, m.experts):
            if len(out) > MAX_CONFIGS:      # checked per layout: memory stays bounded
                raise TooLarge(k + 1, len(space.gpus))
            stages = split(m.layers, pp) if pp <= m.layers else None
            vs = _chunk_options(m.layers, pp, stages) if pp <= m.layers else [1]
            zeros = ZERO if dp * cp > 1 else (0,)
            per_layout = len(micros_all) * len(vs) * len(space.recompute) * len(zeros)
            enumerated += per_layout
            why = _layout_rule(space, tp, cp, pp, dp, ep)
            if why is not None:
                rejected[why] += per_layout
                continue
            for micro in micros_all:
                per_micro = len(vs) * len(space.recompute) * len(zeros)
                runs = space.base.pipeline_runs
                if space.batch % (micro * dp) or (space.batch // (micro * dp)) % runs:
                    rejected["batch"] += per_micro
                    continue
                if micro * space.base.seq > budget.MAX_TOKENS:
                    rejected["budget"] += per_micro
                    continue
                mb = space.batch // (micro * dp)
                for v in vs:
                    per_v = len(space.recompute) * len(zeros)
                    if v > 1 and (mb // runs) % pp:
                        rejected["interleave"] += per_v
                        continue
                    if budget.blocks(pp, v, mb) > budget.MAX_BLOCKS:
                        rejected["budget"] += per_v
                        continue
                    for rec in space.recompute:
                        for z in zeros:
                            if space.reshard_declared and z < 3:
                                rejected["reshard"] += 1
                                continue
                            out.append(Config(n, tp, pp, dp, cp, ep, v, micro, rec, z, stages))
    if len(out) > MAX_CONFIGS:
        raise TooLarge(len(space.gpus), len(space.gpus))
    counts = Counts(enumerated, tuple((r, k) for r, k in rejected.items() if k), len(out))
    return out, counts


def _layouts(n: int, experts: int) -> Iterator[Tuple[int, int, int, int, int]]:
    for tp in divisors(n):
        for cp in divisors(n // tp):
            for pp in divisors(n // (tp * cp)):
                dp = n // (tp * cp * pp)
                for ep in (divisors(tp * dp * cp) if experts else [1]):
                    yield tp, cp, pp, dp, ep


def _layout_rule(space: Space, tp: int, cp: int, pp: int, dp: int, ep: int) -> Optional[str]:
    """The first rule a layout breaks (seer/validate_layout.py's checks), or None."""
    base, m = space.base, space.base.model
    if m.heads % tp or (m.kv_heads % tp and tp % m.kv_heads):
        return "tp_heads"
    if pp > m.layers:
        return "pp_layers"
    grid = rank_order.expert_grid(tp, cp, dp, pp, ep, base.parallel.etp, base.parallel.order) \
        if m.experts else None
    if m.experts and (m.experts % ep or (grid and grid[0] in ("ep", "etp"))):
        return "ep"
    split = cp_split(base.seq, cp)
    if split is not None:
        return "seq_cp" if split == "seq" else "cp_tile"
    if cp > 1 and base.attention == "unfused":
        return "cp_attention"
    if base.offload_layers and pp > 1:
        return "offload_pp"
    if space.order_declared:
        sizes = {"tp": tp, "cp": cp, "ep": ep, "dp": dp, "pp": pp}
        if any(s > 1 and d not in space.order_declared for d, s in sizes.items()):
            return "order"
    if grid:                    # the experts' grid and the order (seer/validate_layout.py, E759)
        return "order"
    return None
