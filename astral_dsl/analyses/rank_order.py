"""Megatron-Core's rank numbering, the one rule that the rank map (analyses/rankmap.py: which
GPU runs which rank, for `astral diagnose` and `astral synth`) and Seer (seer/ranks.py,
seer/comm_groups.py: which groups a forecast prices) both read, so they cannot drift apart.

Megatron-Core 0.16.1 (parallel_state.initialize_model_parallel, RankGenerator) numbers ranks
in a mixed radix over the parallel dimensions, fastest first, in the job's `order` (default
"tp-cp-ep-dp-pp"); dimensions the order leaves out come last. Two numberings of the same order:

- dense (the decoder's generator, ep 1): rank = tp_i + TP (cp_i + CP (dp_i + DP pp_i)) for the
  default; the TP, CP, DP and PP groups come from it;
- expert (the expert generator: context parallelism 1, its tensor dimension the expert tensor
  parallelism ETP, TP and CP folded into the expert ranks): rank = etp_i + ETP (ep_i + EP
  (edp_i + EDP pp_i)) for the default, EDP = TP x DP x CP / (ETP x EP) (parallel_state.py:
  `expert_decoder_rank_generator = RankGenerator(tp=expert_tensor_parallel_size,
  ep=expert_model_parallel_size, dp=expert_data_parallel_size, pp=..., cp=1, order=order)`);
  the expert-tensor-parallel group ("tp" of this numbering), the EP group and the
  expert-data-parallel group come from it. With TP 2, CP 2, EP 4, ETP 1 (the published MoE
  recipes' setting) an EP group is 4 consecutive ranks (0-3), not every 4th; with TP 2, EP 4,
  ETP 2 an expert-TP group is ranks 0-1 and an EP group ranks 0, 2, 4, 6."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

KNOWN = ("tp", "cp", "ep", "dp", "pp")


def expert_dp(tp: int, dp: int, cp: int, ep: int, etp: int = 1) -> int:
    """Ranks holding the same shard of the same routed experts (Megatron-Core's
    expert-data-parallel group): TP x DP x CP / (ETP x EP) (parallel_state.py:
    `expert_data_parallel_size = world_size // (etp x ep x pp)`)."""
    return max(1, tp * dp * cp // max(1, ep * etp))


class Numbering:
    """One of Megatron-Core's numberings: `order` the dimensions fastest first (size-1 ones the
    order leaves out, last), `sizes` and `stride` per dimension."""

    def __init__(self, tp: int, cp: int, ep: int, dp: int, pp: int, order: Sequence[str],
                 experts: bool = False, etp: int = 1):
        named = tuple(d for d in order if d in KNOWN)
        self.order: Tuple[str, ...] = named + tuple(d for d in KNOWN if d not in named)
        if experts:      # expert numbering: its "tp" the expert TP, CP folded into the ranks
            ep, etp = max(1, ep), max(1, etp)
            sizes = {"tp": etp, "cp": 1, "ep": ep, "dp": expert_dp(tp, dp, cp, ep, etp),
                     "pp": pp}
        else:
            sizes = {"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp}
        self.sizes: Dict[str, int] = sizes
        self.stride: Dict[str, int] = {}
        acc = 1
        for d in self.order:
            self.stride[d] = acc
            acc *= sizes[d]
        self.world = acc

    def rank(self, **coords: int) -> int:
        return sum(coords.get(d, 0) * self.stride[d] for d in self.order)

    def coords(self, rank: int) -> Dict[str, int]:
        return {d: (rank // self.stride[d]) % self.sizes[d] for d in self.order}

    def group(self, dims, rank: int = 0) -> List[int]:
        """The ranks that differ from `rank` only along `dims` (a name or several)."""
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        base = self.coords(rank)
        for d in dims:
            base[d] = 0
        start = self.rank(**base)
        out = [start]
        for d in dims:
            out = [r + i * self.stride[d] for r in out for i in range(self.sizes[d])]
        return sorted(out)

    def base(self, dim: str, ranks):
        """Per rank (an int or a numpy array of them), the first rank of its group along `dim`:
        the rank less its coordinate along `dim` times the dimension's stride (groups are told
        apart by it)."""
        s = self.stride[dim]
        return ranks - ((ranks // s) % self.sizes[dim]) * s


def expert_grid(tp: int, cp: int, dp: int, pp: int, ep: int, etp: int,
                order: Sequence[str]) -> Optional[Tuple[str, str]]:
    """The first of Megatron-Core 0.16.1's rules for the expert grid (ETP x EP x EDP x PP over
    the world of TP x CP x DP x PP: parallel_state.initialize_model_parallel) that a layout of a
    model with experts breaks, as (rule, what), or None. Validation (seer/validate_layout.py,
    E753 and E759) and `astral search` (explore/search/space.py) both ask this one function.

    - "ep": EP does not divide TP x DP x CP (the expert ranks of a pipeline stage);
    - "etp": ETP x EP does not divide them ("world_size is not divisible by
      expert_tensor_model_pipeline_parallel size");
    - "named": the order leaves out a dimension of the expert grid above 1 (RankGenerator: "you
      haven't specified the order"): `tp` with ETP > 1, `dp` with EDP > 1;
    - "pp": with PP > 1 and `pp` not last in the order, EDP differs from DP ("When not using
      pp-last rank ordering, the data parallel size of the attention and moe layers must be the
      same") or the two grids' pipeline groups differ ("Pipeline parallel groups are expected to
      be the same for Non-Expert and Expert part"): their PP strides differ."""
    ranks, ep, etp = tp * dp * cp, max(1, ep), max(1, etp)
    if ranks % ep:
        return "ep", f"ep = {ep} does not divide tp x dp x cp = {ranks:,}"
    if ranks % (ep * etp):
        return "etp", f"ep x etp = {ep} x {etp} does not divide tp x dp x cp = {ranks:,}"
    edp = ranks // (ep * etp)
    named = [(d, n) for d, n in (("tp", etp), ("dp", edp)) if n > 1 and d not in order]
    if named:
        d, n = named[0]
        what = "expert tensor parallelism etp" if d == "tp" else "expert-data-parallel size"
        return "named", f"leaves out `{d}`, the {what} {n:,} of the experts' ranks"
    if pp <= 1 or (order and order[-1] == "pp"):
        return None
    dense = Numbering(tp, cp, ep, dp, pp, order)
    expert = Numbering(tp, cp, ep, dp, pp, order, experts=True, etp=etp)
    if edp != dp:
        return "pp", (f"puts `pp` before the last dimension while the experts' data-parallel "
                      f"size tp x dp x cp / (ep x etp) = {edp:,} differs from dp = {dp:,}")
    if dense.stride["pp"] != expert.stride["pp"]:
        return "pp", (f"gives the experts other pipeline groups: consecutive stages are "
                      f"{dense.stride['pp']:,} ranks apart in the dense numbering and "
                      f"{expert.stride['pp']:,} in the experts'")
    return None


__all__ = ["KNOWN", "Numbering", "expert_dp", "expert_grid"]
