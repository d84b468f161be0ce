"""Two faults at once on tests/fixtures/diagnose/small.astral (docs/diagnose.md, "Limits"): for
each pair of fault kinds, seeds 0 to N - 1, the faults drawn in order from the seed's generator
as `astral synth --fault A --fault B --seed S` draws them (the second drawn again while its NIC
part falls on the first's host), diagnosed from the rank log's rows in memory; and each fault
of the pair alone. Prints, per pair: both injected parts named (each covered by a suspect that
is not an alternative), both among the first two suspects, among the first three, each named
when alone, the named suspects that cover neither part, and where both are named the probability
beside the later of the two (a second fault's, given the first: diagnose/verdict.py, in_turn):
how many show <1 %, the least and the median.

    python benchmarks/bench_two_faults.py               # every pair, 20 seeds (about 30 s of CPU)
    python benchmarks/bench_two_faults.py nic+flap 10   # one pair, 10 seeds"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import astral_dsl  # noqa: E402
from astral_dsl import diagnose, seer  # noqa: E402
from astral_dsl.synth import Noise, generate, write  # noqa: E402
from astral_dsl.synth.inject import random_fault  # noqa: E402

SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"
PAIRS = {"nic+gpu": (("nic_port", "gpu"), 3), "nic+nic": (("nic_port", "nic_port"), 3),
         "nic+flap": (("nic_port", "link_flap"), 6), "flap+flap": (("link_flap", "link_flap"), 6),
         "tor+nic": (("tor", "nic_port"), 3), "nic+tor": (("nic_port", "tor"), 3),
         "agg+nic": (("agg", "nic_port"), 3)}


def _draw(kinds, seed, its, rm, fc):
    rng = np.random.default_rng(seed)
    out = []
    host = [None]
    for kind in kinds:
        for _ in range(50):
            f = random_fault(kind, rm, fc, rng, seed, its)
            h = rm.ranks[f.rank].host_index if f.rank is not None else None
            if h is None or h not in host:
                break
        host.append(h)
        out.append(f)
    return out


def _diagnosed(design, fc, rm, faults, its, seed):
    """Per fault: (1-based position of the first suspect covering it or None, named), the
    named suspects covering none of them, and the probability shown beside the later of the
    suspects naming the faults (None unless every fault is named)."""
    data = generate(fc, rm, faults, Noise(), its, seed)
    res = diagnose.diagnose(design, write.to_observed(data), job=fc.job.name)
    pos = []
    for f in faults:
        p = next((i for i, s in enumerate(res.suspects, 1) if s.covers(f.part)), None)
        pos.append((p, p is not None and not res.suspects[p - 1].alternative))
    stray = sum(1 for s in res.suspects if not s.alternative
                and not any(s.covers(f.part) for f in faults))
    later = res.suspects[max(p for p, _ in pos) - 1].probability \
        if all(ok for _, ok in pos) else None
    return pos, stray, later


def main(which, n) -> None:
    design = astral_dsl.load(str(SMALL))
    fc, rm = seer.forecast(design), diagnose.rank_map(design)
    print("| pair | both named | both in the first two | both in the first three | "
          "each named alone | named, covering neither | both named: the later's probability "
          "shown <1 %, its least, median |\n|---|---|---|---|---|---|---|")
    for name in which:
        kinds, its = PAIRS[name]
        named = two = three = alone = stray = 0
        later = []
        for seed in range(n):
            faults = _draw(kinds, seed, its, rm, fc)
            pos, s, p2 = _diagnosed(design, fc, rm, faults, its, seed)
            named += all(ok for _, ok in pos)
            two += all(p is not None and p <= 2 for p, _ in pos)
            three += all(p is not None and p <= 3 for p, _ in pos)
            alone += sum(_diagnosed(design, fc, rm, [f], its, seed)[0][0][1] for f in faults)
            stray += s
            later += [] if p2 is None else [p2]
        shown = (f"{sum(p < 0.005 for p in later)}/{len(later)}, {min(later):.3f}, "
                 f"{float(np.median(later)):.3f}" if later else "-")
        print(f"| {name} ({its} iterations) | {named}/{n} | {two}/{n} | {three}/{n} | "
              f"{alone}/{2 * n} | {stray} | {shown} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(PAIRS),
         int(sys.argv[2]) if len(sys.argv) > 2 else 20)
