"""Where an MoE layer's tokens go: the expected number of expert-parallel ranks, and of NVLink
domains, that hold one of a token's top-k experts (what a fused dispatcher sends a token to
once each: comm.dispatch).

Experts are numbered across the EP ranks in order, `E / n` to a rank (Megatron-Core's
expert numbering; NeMo AutoModel's alike), and a domain holds `n / domains` consecutive EP
ranks. Three routings:

- `topk` (the default): a router's top-k, balanced on average, each token's experts a draw of k
  of the E at random (Megatron-Core's benchmark router, --moe-router-force-load-balancing,
  replaces the logits by random ones before the top-k). Counted as k independent draws: a rank
  of n holds one of them with probability 1 - (1 - 1/n)^k.
- `topk` with the model's expert groups (`expert_groups` G, `group_top_k` g; DeepSeek-V3's
  node-limited routing, technical report section 2.1.2: 8 groups, each token's experts in at
  most 4 of them; Megatron-Core 0.16.1 moe_utils.py group_limited_topk, which the random
  logits of the benchmark router go through too): the token picks g of the G groups at random
  and its experts lie in those. When each domain holds whole groups (G a multiple of the
  domains D), a domain holds a token's expert when one of its G/D groups is picked:
  1 - C(G - G/D, g) / C(G, g); when each group spans whole domains (D a multiple of G), the
  token's experts are k draws over the g x D/G domains of its groups. Groups that straddle
  domains otherwise are priced as without the limit (validate_moe.py warns, W755).
- `round_robin`: NeMo AutoModel's FakeBalancedGate (nemo_automodel 0.7.0,
  components/moe/layers.py, noise 0): token t goes to experts t k, ..., t k + k - 1 (mod E),
  consecutive experts, so to one or two ranks of one domain. Counted exactly over the starts.

Only the counts matter to the pricing: a rank's tokens are routed the same way whichever rank
it is, so a given other rank (or domain) receives from it in proportion (comm.dispatch)."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Tuple

ROUTINGS = ("topk", "round_robin")


def _uniform(slots: int, k: int) -> float:
    """Expected distinct slots (ranks, domains) of `slots` that k independent draws hit."""
    return slots * (1.0 - (1.0 - 1.0 / slots) ** k) if slots > 1 else 1.0


@lru_cache(maxsize=256)
def spread(routing: str, experts: int, k: int, groups: int, group_k: int, ranks: int,
           domains: int) -> Tuple[float, float]:
    """(expected EP ranks, expected domains) holding one of a token's k experts, over an EP
    group of `ranks` ranks in `domains` NVLink domains (module docstring)."""
    ranks, domains = max(1, ranks), max(1, min(domains, ranks))
    k = max(1, min(k, experts)) if experts else max(1, k)
    if routing == "round_robin" and experts >= ranks:
        return _round_robin(experts, k, ranks, domains)
    r = _uniform(ranks, k)
    group_k = min(group_k, k)            # k experts lie in at most k groups
    if 1 < groups and 0 < group_k < groups and experts:
        if groups % domains == 0:
            return r, domains * (1.0 - math.comb(groups - groups // domains, group_k)
                                 / math.comb(groups, group_k))
        if domains % groups == 0:
            return r, _uniform(group_k * domains // groups, k)
    return r, _uniform(domains, k)


def aligned(groups: int, domains: int) -> bool:
    """The model's expert groups nest in the EP group's NVLink domains or hold whole ones (the
    group limit is priced); otherwise it is not (W755)."""
    return groups <= 1 or domains <= 1 or groups % domains == 0 or domains % groups == 0


def _round_robin(experts: int, k: int, ranks: int, domains: int) -> Tuple[float, float]:
    """Exact means over the starts t k mod E (each equally often): the distinct ranks and
    domains that the consecutive experts start .. start + k - 1 (mod E) fall on."""
    per_rank = experts // ranks
    step = math.gcd(k, experts)
    starts = range(0, experts, step)

    def domain(r: int) -> int:       # rank r of the ring unrolled: its domain, unrolled too
        return (r // ranks) * domains + (r % ranks) * domains // ranks

    total_r = total_d = 0
    for s in starts:
        first, last = s // per_rank, (s + k - 1) // per_rank
        total_r += min(ranks, last - first + 1)
        total_d += min(domains, domain(last) - domain(first) + 1)
    n = len(starts)
    return total_r / n, total_d / n
