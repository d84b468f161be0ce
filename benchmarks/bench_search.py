"""`astral search` benchmark: prints figures quoted in the README (never asserted in tests).

GPT-3 175B on 1,024 A100s (benchmarks/gpt3_a100.astral, global batch 1,536): every parallel
configuration enumerated, those Seer's validation or Megatron-LM would reject counted by rule,
the rest bounded below from Seer's operator costs without simulating a schedule (no timeline
is ever built), then, best bound first, Seer's memory estimate and, for what fits, Seer's full
forecast, until no bound left can beat the 10th best. On the
default local pool (every core), in this process (the figures come back as data).

`--scale`: the Llama 3.1 405B job of examples/astral.astral on its 16,384 GPUs, and the same
job on the whole 524,288-GPU reference site (placement `Astral`, dp 4,096, global batch 65,536),
each an `astral search --workers 1 --format json` process of its own: its CPU time (user +
system) and peak RSS from the operating system's accounting (os.wait4), and the search's
counts.

`--fsdp`: a ZeRO-3 / FSDP job, Llama 3 70B on 64 GPUs of one GB200 NVL72 rack
(benchmarks/llama70b_nvl72_fsdp.astral), searched in this process on one worker: its CPU time and
counts (each forecast's layers of one shape copied, ZeRO-3's too: seer/template.py)."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from astral_dsl.explore import search  # noqa: E402


def main() -> None:
    print(f"astral search of benchmarks/gpt3_a100.astral, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, load average before: {os.getloadavg()[0]:.1f}")
    print("  (wall time depends on what else runs; CPU time is the work itself)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0, t0 = time.process_time(), time.perf_counter()
    r = search.run(str(ROOT / "benchmarks" / "gpt3_a100.astral"), top=10)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + (after.ru_utime - before.ru_utime) + \
        (after.ru_stime - before.ru_stime)
    c = r.counts
    print(f"  {c.enumerated:>9,} configurations enumerated ({r.engine})")
    print(f"  {c.enumerated - c.admitted:>9,} rejected by Seer's rules and Megatron-LM's")
    print(f"  {c.admitted:>9,} bounded below analytically (no schedule simulated)")
    print(f"  {r.memory_checked:>9,} could reach the top 10 by their bound: Seer's memory "
          "estimate")
    print(f"  {r.fit:>9,} fit in memory: forecast fully (schedule simulated, no timeline)")
    best = r.rows[0]
    print(f"  best: {best['config'].label()}: {best['iteration_time_s']:.3f} s, "
          f"{best['tokens_per_s']:,.0f} tokens/s, MFU {best['mfu'] * 100:.1f} %")
    if r.declared:
        print(f"  as declared ({r.declared['label']}): {r.declared['iteration_time_s']:.3f} s")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s")
    print("target: a search for GPT-3 175B on 1,024 A100s that enumerates at least 1,000 "
          "configurations, prunes analytically and forecasts the survivors without timelines, "
          "under 60 s on this machine's 2 cores")


def _whole_site(text: str) -> str:
    """examples/astral.astral's job on all 524,288 GPUs: 32 x its 16,384, dp and batch x 32."""
    for a, b in (("placement = Astral.pods[0]", "placement = Astral"),
                 ("gpus = 16384", "gpus = 524288"), ("dp = 128,", "dp = 4096,"),
                 ("global_batch = 2048,", "global_batch = 65536,")):
        assert a in text, a
        text = text.replace(a, b)
    return text


def scale() -> None:
    print(f"astral search --workers 1 at scale, Python {sys.version.split()[0]}, load average "
          f"before: {os.getloadavg()[0]:.1f} (wall time depends on what else runs)")
    example = ROOT / "examples" / "astral.astral"
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "astral_524288.astral"
        whole.write_text(_whole_site(example.read_text(encoding="utf-8")), encoding="utf-8")
        for gpus, path in (("16,384", example), ("524,288", whole)):
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "astral_dsl.cli", "search", str(path),
                                     "--workers", "1", "--format", "json"], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env=dict(os.environ, PYTHONPATH=str(ROOT)))
            out = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            doc = json.loads(out)
            c, best = doc["counts"], doc["rows"][0]
            print(f"  {gpus:>7} GPUs: exit {os.waitstatus_to_exitcode(status)}, "
                  f"CPU {usage.ru_utime + usage.ru_stime:.1f} s, peak RSS "
                  f"{usage.ru_maxrss / 1024:.0f} MiB, wall {wall:.1f} s; {c['enumerated']:,} "
                  f"enumerated, {c['admitted']:,} admitted, {c['fit']} forecast fully; best "
                  f"tp{best['tp']} pp{best['pp']} dp{best['dp']} cp{best['cp']} "
                  f"mb{best['micro_batch']}: {best['iteration_time_s']:.3f} s")


def fsdp() -> None:
    print(f"astral search of benchmarks/llama70b_nvl72_fsdp.astral, one worker, Python "
          f"{sys.version.split()[0]}, load average before: {os.getloadavg()[0]:.1f}")
    cpu0 = time.process_time()
    r = search.run(str(ROOT / "benchmarks" / "llama70b_nvl72_fsdp.astral"), top=10, workers=1)
    cpu = time.process_time() - cpu0
    c, best = r.counts, r.rows[0]
    print(f"  {c.enumerated:,} enumerated, {c.admitted:,} admitted, {r.fit} forecast fully; "
          f"best {best['config'].label()}: {best['iteration_time_s']:.3f} s; CPU {cpu:.1f} s")


if __name__ == "__main__":
    if "--scale" in sys.argv[1:]:
        scale()
    elif "--fsdp" in sys.argv[1:]:
        fsdp()
    else:
        main()
