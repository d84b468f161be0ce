"""The proof that `astral diagnose` localises, and its speed (docs/diagnose.md, "The proof").

    python benchmarks/bench_diagnose.py                 # the full run (make bench-diagnose)
    python benchmarks/bench_diagnose.py --per-kind 4 --none 6 --no-speed     # a quick look

1. Random injections on the single-pod example's job (1,024 ranks, 3 iterations): for each
   fault kind (a GPU 10-30 % slow, a NIC port at half rate, a ToR switch, an aggregation switch,
   an intermittent link, a GPU or a NIC link bad from 20-45 % of the run to its end, a run
   faster than its forecast by 1.13-3.48x the least speed-up its band cannot explain)
   --per-kind trials, and --none fault-free runs. Every run's hosts' clocks drift up to
   --drift ppm (default 10) besides their offsets, and every other run of each kind is logged
   with Megatron-LM's timers (forward-compute / backward-compute: wall time, TP collectives and
   waits included) instead of compute alone. Each trial
   generates the job's observed data with astral_dsl.synth (its own seed: the fault, the
   noise, the clocks) and diagnoses its compact rank log; the log's rows go to the log
   reader's column builder in memory, as reading the CSV would give them (times rounded to
   0.1 us as the file holds them): formatting and parsing 700,000 rows of text was half of a
   trial's time, and the readers are proven by the tests and timed in part 2. Printed: the
   confusion table (injected kind against the kind of the first suspect) with each kind's
   top-1 and top-3 shares and their 95 % Wilson intervals, the share of trials whose injected
   part is the first suspect and among the first three, the share of fault-free runs that
   raised an alarm, each with its 95 % Wilson interval, against the targets (>= 95 %,
   >= 99 %, <= 2 %), and the distribution of the job-level probability that something is
   wrong over the fault-free and the faulty runs.
2. Speed: diagnosing 1,024 ranks x 3 iterations from each input format (CSV, JSON Lines,
   1,024 gzipped Kineto traces): reading and diagnosing in process, wall and CPU seconds;
   then three whole `astral diagnose` processes on the traces (target: at most 10 s of wall
   on two idle cores). The machine's load average is printed with it: it is shared.

Trials run in --workers processes (default 2, the machine's cores); each trial's outcome does
not depend on how many."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DESIGN = REPO / "examples" / "single_pod.astral"
KINDS = ("gpu", "nic_port", "tor", "agg", "link_flap", "partial", "fast")
COLUMNS = ("gpu", "host", "nic port", "switch", "tier", "link", "software", "forecast", "none")
TARGETS = {"first": 0.95, "top3": 0.99, "alarms": 0.02}

_STATE = {}


def _setup():
    import astral_dsl
    from astral_dsl import diagnose, seer

    if not _STATE:
        design = astral_dsl.load(str(DESIGN))
        _STATE.update(design=design, fc=seer.forecast(design), rm=diagnose.rank_map(design))
    return _STATE


def _trial(job):
    from astral_dsl.synth import Noise
    from benchmarks.proof import trial

    kind, seed, drift, timers = job
    s = _setup()
    t0 = time.time()
    t = trial(s["design"], s["fc"], s["rm"], kind, seed, "memory", Noise(drift=drift * 1e-6),
              timers=timers)
    first_kind = t.first.split(" ")[0] if t.first else "none"
    if t.first and t.first.startswith("nic port"):
        first_kind = "nic port"
    return {"kind": kind, "seed": seed, "timers": timers, "drift_ppm": drift,
            "part": t.fault.part if t.fault else None,
            "position": t.position, "first": t.first, "first_kind": first_kind,
            "suspects": t.suspects, "diagnostics": list(t.diagnostics),
            "probability": t.probability, "verdict": t.verdict, "tied": t.tied,
            "seconds": round(time.time() - t0, 2)}


def wilson(k: int, n: int, z: float = 1.959964):
    """The Wilson score interval of k successes in n trials (95 %: z = 1.96; Wilson 1927,
    J. Am. Stat. Assoc. 22: 209-212)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    return max(0.0, centre - half), min(1.0, centre + half)


def _share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} ({lo * 100:.0f}-{hi * 100:.0f} %)"


def table(results) -> str:
    rows = ["| injected | trials | " + " | ".join(COLUMNS) + " | first (95 % Wilson) | "
            "top 3 (95 % Wilson) |", "|---" * (len(COLUMNS) + 4) + "|"]
    for kind in KINDS + ("none",):
        rs = [r for r in results if r["kind"] == kind]
        if not rs:
            continue
        counts = [sum(1 for r in rs if r["first_kind"] == c) for c in COLUMNS]
        if kind == "none":
            first = top3 = "-"
        else:
            first = _share(sum(1 for r in rs if r["position"] == 1), len(rs))
            top3 = _share(sum(1 for r in rs if r["position"] is not None
                              and r["position"] <= 3), len(rs))
        rows.append(f"| {kind} | {len(rs)} | " + " | ".join(str(c) for c in counts)
                    + f" | {first} | {top3} |")
    return "\n".join(rows)


def by_timers(results) -> str:
    """The three figures for the runs logged with each kind of timers."""
    out = []
    for timers in ("kernels", "megatron"):
        rs = [r for r in results if r.get("timers") == timers]
        faults = [r for r in rs if r["kind"] != "none"]
        none = [r for r in rs if r["kind"] == "none"]
        if not rs:
            continue
        first = sum(r["position"] == 1 for r in faults)
        top3 = sum(r["position"] is not None and r["position"] <= 3 for r in faults)
        alarms = sum(r["suspects"] > 0 for r in none)
        out.append(f"logged with {timers} timers: first {_share(first, len(faults))}, top 3 "
                   f"{_share(top3, len(faults))}, alarms {_share(alarms, len(none))}")
    return "\n".join(out)


def calibration(results) -> str:
    """The job-level probability's distribution over the fault-free and the faulty runs."""
    import numpy as np

    out = []
    for name, rs in (("fault-free", [r for r in results if r["kind"] == "none"]),
                     ("faulty", [r for r in results if r["kind"] != "none"])):
        if not rs:
            continue
        p = np.array([r["probability"] for r in rs])
        q = np.quantile(p, [0, 0.25, 0.5, 0.75, 0.95, 1])
        out.append(f"job probability over {len(rs)} {name} runs: min {q[0]:.3f}, quartiles "
                   f"{q[1]:.3f} / {q[2]:.3f} / {q[3]:.3f}, 95th percentile {q[4]:.3f}, max "
                   f"{q[5]:.3f}; above 0.5 in {int((p > 0.5).sum())}, above 0.95 in "
                   f"{int((p > 0.95).sum())}")
    return "\n".join(out)


def summary(results) -> str:
    faults = [r for r in results if r["kind"] != "none"]
    none = [r for r in results if r["kind"] == "none"]
    out = []
    for name, k, n, target, better in (
            ("injected part is the first suspect", sum(r["position"] == 1 for r in faults),
             len(faults), TARGETS["first"], "at least"),
            ("injected part among the first three",
             sum(r["position"] is not None and r["position"] <= 3 for r in faults),
             len(faults), TARGETS["top3"], "at least"),
            ("fault-free runs raising an alarm", sum(r["suspects"] > 0 for r in none),
             len(none), TARGETS["alarms"], "at most")):
        if not n:
            continue
        lo, hi = wilson(k, n)
        ok = (k / n >= target) if better == "at least" else (k / n <= target)
        out.append(f"{name}: {k}/{n} = {k / n * 100:.1f} % (95 % interval {lo * 100:.1f}-"
                   f"{hi * 100:.1f} %); target {better} {target * 100:.0f} %: "
                   f"{'met' if ok else 'NOT MET'}")
    firsts = [r for r in faults if r["position"] == 1]
    tied = [r for r in firsts if r.get("tied")]
    if firsts:
        kinds = sorted({r["kind"] for r in tied})
        by_kind = ", ".join(f"{k} {sum(r['kind'] == k for r in tied)}" for k in kinds)
        out.append(f"of those named first, in a tie of parts the evidence cannot tell apart "
                   f"(the suspect names them all, \"A or B\"): {len(tied)}/{len(firsts)}"
                   + (f" ({by_kind})" if tied else ""))
    return "\n".join(out)


def speed() -> None:
    from astral_dsl import diagnose, observe
    from astral_dsl.synth import Fault, generate, write

    s = _setup()
    rm = s["rm"]
    port = rm.ranks[812].ports[1]
    data = generate(s["fc"], rm, [Fault("nic_port", port.name, 0.5, 812)], seed=5)
    print(f"\nspeed: {rm.world:,} ranks x {len(data.iterations)} iterations, a NIC port at half "
          f"rate (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {"csv": os.path.join(tmp, "log.csv"), "jsonl": os.path.join(tmp, "log.jsonl"),
                  "kineto": os.path.join(tmp, "traces")}
        write.write_log(data, inputs["csv"])
        write.write_log(data, inputs["jsonl"], "jsonl")
        write.write_traces(data, inputs["kineto"])
        os.sync()        # the files written back first: a job's traces are on disk before
        #                  anyone diagnoses them, and writeback would take CPU from the reading
        for fmt, path in inputs.items():
            c0, t0 = os.times(), time.time()
            obs = observe.load([path])
            t1 = time.time()
            result = diagnose.diagnose(s["design"], obs)
            t2, c1 = time.time(), os.times()
            cpu = (c1.user - c0.user) + (c1.system - c0.system) + \
                (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
            first = result.suspects[0] if result.suspects else None
            print(f"  {fmt:<7} read {t1 - t0:6.2f} s + diagnose {t2 - t1:5.2f} s = "
                  f"{t2 - t0:6.2f} s wall ({cpu:6.2f} s CPU); first suspect: "
                  f"{first.kind + ' ' + first.path if first else 'none'}")
        for run in range(3):
            command(inputs["kineto"], run)


def command(traces: str, run: int) -> None:
    """The whole `astral diagnose` process on the traces (start-up, compile, the forecast, the
    reading in its default pool, the diagnosis, the output): wall and CPU (its children's
    included), with the load average before it."""
    import resource
    import subprocess

    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "diagnose", str(DESIGN),
                           "--observed", traces], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    head = proc.stdout.splitlines()[0] if proc.stdout else proc.stderr.strip()[-200:]
    print(f"  astral diagnose --observed traces/ (run {run + 1}): {wall:5.2f} s wall "
          f"({cpu:5.2f} s CPU), exit {proc.returncode}, load average before "
          f"{load:.1f} (target: 10 s on two idle cores); {head}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-kind", type=int, default=20, help="trials per fault kind (20)")
    ap.add_argument("--none", type=int, default=150, help="fault-free runs (150)")
    ap.add_argument("--seed", type=int, default=20_000, help="first seed")
    ap.add_argument("--drift", type=float, default=10.0,
                    help="hosts' clocks drift up to this many ppm (10)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", help="also write every trial as JSON Lines")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed measurement")
    ap.add_argument("--speed-only", action="store_true", help="only the speed measurement")
    args = ap.parse_args()
    if args.speed_only:
        speed()
        return 0
    timers = ("kernels", "megatron")          # every other trial of each kind
    jobs = [(k, args.seed + 1000 * i + j, args.drift, timers[i % 2])
            for i in range(args.per_kind) for j, k in enumerate(KINDS)]
    jobs += [("none", args.seed + 500_000 + i, args.drift, timers[i % 2])
             for i in range(args.none)]
    print(f"{len(jobs)} trials on {DESIGN.name}'s job ({args.workers} workers)", flush=True)
    t0 = time.time()
    results = []
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for r in pool.map(_trial, jobs, chunksize=1):
            results.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
            if (r["kind"] != "none" and r["position"] != 1) or \
                    (r["kind"] == "none" and r["suspects"]):
                print(f"  {r['kind']} seed {r['seed']}: {r['part']} ranked {r['position']}, "
                      f"first {r['first']}", flush=True)
    if out:
        out.close()
    mean = sum(r["seconds"] for r in results) / max(1, len(results))
    print(f"{len(results)} trials in {time.time() - t0:.0f} s ({mean:.1f} s per trial and "
          f"worker)\n")
    print("first suspect's kind per injected kind:\n")
    print(table(results))
    print()
    print(summary(results))
    print(by_timers(results))
    print(calibration(results))
    diag = sorted({c for r in results for c in r["diagnostics"]})
    if diag:
        print("diagnostics raised in some trial:", ", ".join(diag))
    if not args.no_speed:
        speed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
