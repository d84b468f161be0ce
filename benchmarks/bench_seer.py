"""Seer benchmark: prints the time to forecast an iteration with its timeline (quoted in the
README; never asserted here). Each figure is the best of N runs in one process, after a warm-up:

- GPT-3 175B on 1,024 A100s (TP8 PP8 DP16, global batch 1,536, micro-batch 1, sequence 2,048),
  target < 1 s;
- Llama 3 405B on 16,384 H100s (TP8 PP16 DP128, global batch 2,048, micro-batch 1, sequence
  8,192, 126 layers split [7, 14 x 8, 7]), target < 3 s;
- the same two with DP doubled (and the global batch with it): the cost of a forecast grows with
  the operators per rank, not with the GPU count.

"With its timeline" means the forecast plus every operator event of the iteration as data
(`Forecast.timeline()`), which is what `--trace` serialises."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from astral_dsl import seer  # noqa: E402
from astral_dsl.seer.comm import Network, Tier  # noqa: E402
from astral_dsl.seer.costs import GpuSpec  # noqa: E402
from astral_dsl.seer.spec import JobSpec, ModelSpec, ParallelSpec  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
A100 = GpuSpec("A100_80GB", (("bf16", 312e12),), 80e9, 2039e9, 300e9)
H100 = GpuSpec("H100_SXM", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
# rail-optimised fat trees: 8 NICs per host; 25 GB/s (HDR) and 50 GB/s (2 x 200G) per GPU
SELENE = Network(8, 300e9, (25e9,) * 8, (Tier("leaf", 20, True, 1.0), Tier("spine", 140, True, 1.0),
                                         Tier("core", 10**6, False, 1.0)))
ASTRAL = Network(8, 450e9, (50e9,) * 8, (Tier("tor", 128, True, 1.0), Tier("agg", 8192, True, 1.0),
                                         Tier("core", 10**6, False, 1.0)))
GPT3 = ModelSpec("GPT3_175B", 96, 12288, 96, 96, 49152, 51200, 2048, "gelu")
LLAMA405 = ModelSpec("Llama3_405B", 126, 16384, 128, 8, 53248, 128256, 8192, "swiglu")


def gpt3(dp=16):
    par = ParallelSpec(tp=8, pp=8, dp=dp, sp=True)
    return JobSpec("gpt3_175b", GPT3, par, 96 * dp, 1, 2048, "selective", "bf16")


def llama405(dp=128):
    par = ParallelSpec(tp=8, pp=16, dp=dp, sp=True, stages=(7,) + (8,) * 14 + (7,), zero=1)
    return JobSpec("llama3_405b", LLAMA405, par, 16 * dp, 1, 8192, "full", "bf16")


def timed(job, gpu, net):
    best, fc, events = float("inf"), None, 0
    seer.run(job, gpu, net)                       # warm-up
    for _ in range(RUNS):
        t = time.perf_counter()
        fc = seer.run(job, gpu, net)
        events = sum(1 for _ in fc.timeline())
        best = min(best, time.perf_counter() - t)
    return best, fc, events


def main() -> None:
    rows = [("GPT-3 175B, 1,024 A100 (TP8 PP8 DP16)", gpt3(16), A100, SELENE, 1.0),
            ("GPT-3 175B, 2,048 A100 (DP32)", gpt3(32), A100, SELENE, None),
            ("Llama 3 405B, 16,384 H100 (TP8 PP16 DP128)", llama405(128), H100, ASTRAL, 3.0),
            ("Llama 3 405B, 32,768 H100 (DP256)", llama405(256), H100, ASTRAL, None)]
    print(f"{'job':<46} {'forecast+timeline':>18} {'events':>10} {'iteration':>10} {'MFU':>6}")
    for label, job, gpu, net, target in rows:
        t, fc, n = timed(job, gpu, net)
        goal = f"  (target < {target:g} s)" if target else ""
        print(f"{label:<46} {t:16.3f} s {n:10,} {fc.iteration_time:9.2f}s {fc.mfu:6.1%}{goal}")


if __name__ == "__main__":
    main()
