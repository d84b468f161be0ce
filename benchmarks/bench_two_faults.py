"""Two faults at once on tests/fixtures/diagnose/small.astral (docs/diagnose.md, "Limits"): for
each pair of fault kinds, seeds 0 to N - 1, the faults drawn in order from the seed's generator
as `astral synth --fault A --fault B --seed S` draws them (the second drawn again while its NIC
part falls on the first's host), diagnosed from the rank log's rows in memory; and each fault
of the pair alone. Prints, per pair: both injected parts named (each covered by a suspect that
is not an alternative), both among the first two suspects, among the first three, each named
when alone, the named suspects that cover neither part, and where both are named the probability
beside each of the two, the earlier's and the later's (each given that the other named suspects
are real: diagnose/verdict.py, given_the_others): how many show less than 90 % beside the
earlier (a first-round share of one fault, ~50 % for two equally clear ones) and less than 1 %
beside the later, with their least and median.

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
    named suspects covering none of them, and the probabilities shown beside the earliest and
    the latest of the suspects naming the faults (None unless every fault is named)."""
    data = generate(fc, rm, faults, Noise(), its, seed)
    res = diagnose.diagnose(design, write.to_observed(data), job=fc.job.name)
    pos = []
    for f in faults:
        p = next((i for i, s in enumerate(res.suspects, 1) if s.covers(f.part)), None)
        pos.append((p, p is not None and not res.suspects[p - 1].alternative))
    stray = sum(1 for s in res.suspects if not s.alternative
                and not any(s.covers(f.part) for f in faults))
    shown = (res.suspects[min(p for p, _ in pos) - 1].probability,
             res.suspects[max(p for p, _ in pos) - 1].probability) \
        if all(ok for _, ok in pos) else None
    return pos, stray, shown


def main(which, n) -> None:
    design = astral_dsl.load(str(SMALL))
    fc, rm = seer.forecast(design), diagnose.rank_map(design)
    print("| pair | both named | both in the first two | both in the first three | "
          "each named alone | named, covering neither | both named: the earlier's probability "
          "shown <90 %, its least, median | the later's shown <1 %, its least, median |\n"
          "|---|---|---|---|---|---|---|---|")
    for name in which:
        kinds, its = PAIRS[name]
        named = two = three = alone = stray = 0
        first, later = [], []
        for seed in range(n):
            faults = _draw(kinds, seed, its, rm, fc)
            pos, s, p2 = _diagnosed(design, fc, rm, faults, its, seed)
            named += all(ok for _, ok in pos)
            two += all(p is not None and p <= 2 for p, _ in pos)
            three += all(p is not None and p <= 3 for p, _ in pos)
            alone += sum(_diagnosed(design, fc, rm, [f], its, seed)[0][0][1] for f in faults)
            stray += s
            first += [] if p2 is None else [p2[0]]
            later += [] if p2 is None else [p2[1]]
        print(f"| {name} ({its} iterations) | {named}/{n} | {two}/{n} | {three}/{n} | "
              f"{alone}/{2 * n} | {stray} | {_shown(first, 0.895)} | {_shown(later, 0.005)} |",
              flush=True)


def _shown(ps, below) -> str:
    """How many of `ps` show below `below` (as the text rounds them: 0.895 is "<90%"), of
    how many, their least and median."""
    return (f"{sum(p < below for p in ps)}/{len(ps)}, {min(ps):.3f}, "
            f"{float(np.median(ps)):.3f}" if ps else "-")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(PAIRS),
         int(sys.argv[2]) if len(sys.argv) > 2 else 20)
