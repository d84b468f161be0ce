"""Seer benchmark: prints the in-process time of forecasts (quoted in the README and
docs/seer.md; never asserted here). Times are CPU time of this process (time.process_time: the
machine is shared, and wall time counts the other processes too): "cold" is the first forecast
of that job in the process (after the imports and one forecast of another job), "warm" the best
of N more (the dependency order of a pipeline schedule is cached per shape, seer/schedule.py;
the memory estimate of a job, memory.of_job, is cleared before each: a warm forecast estimates
it once, as a forecast of a new job does).

Forecasts (the rule included):
- Megatron-LM's 1T model on 3,072 A100s (TP8 PP64 DP6, global batch 3,072, sequence 2,048,
  full recompute; Narayanan et al. 2021's largest run) whose micro-batch the rule chooses:
  ten candidates, pruned by their lower bounds; target < 0.3 s;
- GPT-3 175B on 64 A100s (TP8 PP8 v3, SP + selective, Korthikanti et al. 2022): < 30 ms;
- the reference job, Llama 3 405B on 16,384 H800s (interleaved, virtual stages by the rule).

Forecast plus timeline (every operator event of the iteration as data, seer/timeline.py's
columns, what `--trace` serialises): GPT-3 175B on 1,024 A100s (target < 60 ms) and Llama 3
405B on 16,384 H100s (target < 3 s), each also with DP doubled: the cost grows with the
operators per rank, not with the GPU count. Then the Chrome trace of the first written from
its timeline (outputs/forecast/trace.py), and its size.

ZeRO-3 / FSDP forecasts (`--fsdp`: only these), calibration rows of the shipped runs table
(seer/calibration/modern.csv): Megatron-LM's FSDP, Llama 3 70B and 3.1 405B on 64 GB200s (NeMo
25.09, Megatron-Bridge's performance summary); NeMo AutoModel's Llama 3 70B (CP 2) and Qwen3 MoE
30B on H100s; torchtitan's Llama 3.1 8B on 8 and 405B on 512 H100s (PP 8, TP 8; torchtitan's
2024-12 benchmarks). Each is timed warm twice: with every layer built, as Seer built ZeRO-3 jobs
before ("built"), and with a run of alike layers copied (template.Builder.each, each layer's
weight gather its own: "copied"); the same forecast to the bit (tests/test_seer_speed.py).

The work budget: one simulation of 1,000,000 pipeline blocks (seer/budget.py), its time and the
process's peak resident memory."""
from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import astral_dsl  # noqa: E402
from astral_dsl import seer  # noqa: E402
from astral_dsl.outputs.forecast import trace  # noqa: E402  (numpy: imports are not the work)
from astral_dsl.seer.comm import Network, Tier  # noqa: E402
from astral_dsl.seer import memory  # noqa: E402
from astral_dsl.seer.costs import GpuSpec  # noqa: E402
from astral_dsl.seer.model_spec import ModelSpec  # noqa: E402
from astral_dsl.seer.spec import JobSpec, ParallelSpec  # noqa: E402
from astral_dsl.seer.template import Builder  # noqa: E402
from astral_dsl.runs.evaluate import prepare  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import RUN_FILES  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
REPO = Path(__file__).resolve().parents[1]
A100 = GpuSpec("A100_80GB", (("bf16", 312e12), ("fp16", 312e12)), 80e9, 2039e9, 300e9)
H100 = GpuSpec("H100_SXM", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
# rail-optimised fat trees: 8 NICs per host; 25 GB/s (HDR) and 50 GB/s (2 x 200G) per GPU
SELENE = Network(8, 300e9, (25e9,) * 8, (Tier("leaf", 20, True, 1.0), Tier("spine", 140, True, 1.0),
                                         Tier("core", 10**6, False, 1.0)))
ASTRAL = Network(8, 450e9, (50e9,) * 8, (Tier("tor", 128, True, 1.0), Tier("agg", 8192, True, 1.0),
                                         Tier("core", 10**6, False, 1.0)))
GPT3 = ModelSpec("GPT3_175B", 96, 12288, 96, 96, 49152, 51200, 2048, "gelu")
GPT_1T = ModelSpec("GPT_1T", 128, 25600, 160, 160, 102400, 51200, 2048, "gelu")
LLAMA405 = ModelSpec("Llama3_405B", 126, 16384, 128, 8, 53248, 128256, 8192, "swiglu")


def megatron_1t():
    par = ParallelSpec(tp=8, pp=64, dp=6)
    return JobSpec("megatron_1t", GPT_1T, par, 3072, None, 2048, "full", "fp16",
                   attention="unfused", tp_overlap="none")


def gpt3_64():
    par = ParallelSpec(tp=8, pp=8, dp=1, sp=True, v=3, schedule="interleaved")
    return JobSpec("gpt3_175b", GPT3, par, 64, 1, 2048, "selective", "bf16", attention="unfused")


def gpt3(dp=16):
    par = ParallelSpec(tp=8, pp=8, dp=dp, sp=True)
    return JobSpec("gpt3_175b", GPT3, par, 96 * dp, 1, 2048, "selective", "bf16")


def llama405(dp=128):
    par = ParallelSpec(tp=8, pp=16, dp=dp, sp=True, stages=(7,) + (8,) * 14 + (7,), zero=1)
    return JobSpec("llama3_405b", LLAMA405, par, 16 * dp, 1, 8192, "full", "bf16")


def timed(fn):
    t = time.process_time()
    out = fn()
    cold = time.process_time() - t
    warm = float("inf")
    for _ in range(RUNS):
        memory.of_job.cache_clear()     # each warm forecast estimates its memory (once) again
        t = time.process_time()
        out = fn()
        warm = min(warm, time.process_time() - t)
    return cold, warm, out


FSDP_ROWS = (("run_r142", "Megatron FSDP, Llama 3 70B, 64 GB200"),
             ("run_r144", "Megatron FSDP, Llama 3.1 405B (TP2), 64 GB200"),
             ("run_r212", "AutoModel FSDP2, Llama 3 70B (CP2), 64 H100"),
             ("run_r209", "AutoModel FSDP2, Qwen3 MoE 30B (EP8), 8 H100"),
             ("run_r213", "torchtitan FSDP2, Llama 3.1 8B, 8 H100"),
             ("run_r225", "torchtitan FSDP2, Llama 3.1 405B (TP8 PP8), 512 H100"))


def every_layer_built(each):
    """Builder.each with no key: every layer built (the path ZeRO-3 jobs took before)."""
    def built(self, layers, body, key=None, own=range(0)):
        each(self, layers, body, None, own)
    return built


def fsdp() -> None:
    rows = {p.spec.name: p for p in prepare(read_table(RUN_FILES["modern"])) if p.status == "ok"}
    print(f"{'ZeRO-3 / FSDP forecast, CPU time (warm)':<52} {'built':>9} {'copied':>9}"
          f" {'iteration':>10}")
    each = Builder.each
    for name, label in FSDP_ROWS:
        p = rows[name]
        times = []
        for patch in (every_layer_built(each), each):
            Builder.each = patch
            try:
                _, warm, fc = timed(lambda: seer.run(p.spec, p.gpu, p.net))
            finally:
                Builder.each = each
            times.append((warm, fc.iteration_time))
        (before, t0), (after, t1) = times
        assert t0 == t1, name          # the same forecast, to the bit
        print(f"{label:<52} {before * 1e3:7.1f}ms {after * 1e3:7.1f}ms {t1:9.3f}s")


def main() -> None:
    seer.run(gpt3(16), A100, SELENE)                    # imports, calibration, first use
    if "--fsdp" in sys.argv[1:]:
        fsdp()
        return
    reference = astral_dsl.load(REPO / "examples" / "astral.astral")
    print(f"{'forecast (rule included), CPU time':<52} {'cold':>9} {'warm':>9} {'iteration':>10}"
          "  chosen")
    rows = [("Megatron 1T, 3,072 A100 (micro by the rule)",
             lambda: seer.run(megatron_1t(), A100, SELENE), 0.3),
            ("GPT-3 175B, 64 A100 (TP8 PP8 v3)", lambda: seer.run(gpt3_64(), A100, SELENE), 0.03),
            ("reference: Llama 3 405B, 16,384 H800 (v by the rule)",
             lambda: seer.forecast(reference, job="llama405b"), None),
            # a plain forecast: the rule's choice stated, no search, no timeline
            ("reference, virtual_stages = 8 stated (no rule)",
             lambda: seer.forecast(reference, job="llama405b", virtual_stages=8), 0.01)]
    for label, fn, target in rows:
        cold, warm, fc = timed(fn)
        goal = f"  (target < {target * 1e3:g} ms)" if target else ""
        chosen = ", ".join(f"{k} {v}" for k, v in fc.chosen)
        print(f"{label:<52} {cold * 1e3:7.0f}ms {warm * 1e3:7.0f}ms {fc.iteration_time:9.2f}s  "
              f"{chosen}{goal}")
    print()
    print(f"{'forecast + timeline, CPU time':<52} {'cold':>9} {'warm':>9} {'events':>10} {'MFU':>6}")
    rows = [("GPT-3 175B, 1,024 A100 (TP8 PP8 DP16)", gpt3(16), A100, SELENE, 0.06),
            ("GPT-3 175B, 2,048 A100 (DP32)", gpt3(32), A100, SELENE, None),
            ("Llama 3 405B, 16,384 H100 (TP8 PP16 DP128)", llama405(128), H100, ASTRAL, 3.0),
            ("Llama 3 405B, 32,768 H100 (DP256)", llama405(256), H100, ASTRAL, None)]
    for label, job, gpu, net, target in rows:
        def with_timeline(job=job, gpu=gpu, net=net):
            fc = seer.run(job, gpu, net)
            return fc, len(fc.timeline())
        cold, warm, (fc, n) = timed(with_timeline)
        goal = f"  (target < {target * 1e3:g} ms)" if target else ""
        print(f"{label:<52} {cold * 1e3:7.0f}ms {warm * 1e3:7.0f}ms {n:10,} {fc.mfu * 100:5.1f} %{goal}")
    fc = seer.run(gpt3(16), A100, SELENE)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        t = time.process_time()
        trace.write_trace(fc, path)
        dt = time.process_time() - t
        size = os.path.getsize(path)
    print(f"the Chrome trace of GPT-3 175B on 1,024 A100 (all {len(fc.timeline()):,} events): "
          f"written in {dt:.2f} s of CPU, {size / 1e6:.0f} MB")
    print()
    m = ModelSpec("Llama_64L", 64, 4096, 32, 8, 14336, 128256, 8192, "swiglu")
    budget = JobSpec("budget", m, ParallelSpec(tp=8, pp=8, dp=1), 62500, 1, 8192, "full", "bf16")
    t = time.process_time()
    seer.run(budget, H100, ASTRAL)
    dt = time.process_time() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"work budget: 1,000,000 pipeline blocks in {dt:.2f} s of CPU; "
          f"peak resident memory of this process {rss:.0f} MiB")
    print()
    fsdp()


if __name__ == "__main__":
    main()
