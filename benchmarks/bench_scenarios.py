"""What a what-if costs: a scenario on the reference design against a plain check (figures
quoted in the README, never asserted in tests).

In process, median of N runs after a warm-up: compiling the reference, its engineering checks,
and each scenario alone (the design compiled again under it, with the replicas it names
isolated, then checked), with the number of instances before and after isolation; then the
forecast of its job, plainly and under a failed plane, NIC port and uplink."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUNS = int(os.environ.get("BENCH_RUNS", "7"))

from astral_dsl import api, seer  # noqa: E402
from astral_dsl.analyses.engineering import analyse, run_scenario  # noqa: E402


def median_ms(fn) -> float:
    fn()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


# what-ifs beyond the example's own: one switch, one NIC port, one link of the 524,288-GPU
# reference (isolating the route to a NIC, never the replicas)
EXTRA = """
scenario one_tor { fail Astral.fabric.pod[3].rail[4].plane[A].tor[17] }
scenario one_port { fail Astral.pods[3].rows[5].racks[2].hosts[1].nics[4].port[b] }
scenario one_uplink {
  fail Astral.fabric.pod[0].rail[4].plane[A].tor[0] -- Astral.fabric.pod[0].rail[4].plane[A].agg[3]
}
"""


def main() -> None:
    path = ROOT / "examples" / "astral.astral"
    ws = api.compiles(path.read_text() + EXTRA, name="astral.astral", root=path.parent)
    design = ws.design
    base = analyse(design)
    compile_ms = median_ms(lambda: ws.compile())
    check_ms = median_ms(lambda: analyse(ws.compile()))
    print(f"reference design, 524,288 GPUs, {len(design.instances)} distinct instances; "
          f"in process, median of {RUNS}")
    print(f"  compile (parsed modules reused)        {compile_ms:7.1f} ms")
    print(f"  compile + engineering checks            {check_ms:7.1f} ms   (the plain check)")
    for scenario in design.scenarios:
        twin = ws.under(scenario)
        ms = median_ms(lambda: run_scenario(design, scenario, base, ws.under(scenario)))
        print(f"  scenario {scenario.template:<14} compile + check {ms:7.1f} ms   "
              f"{ms / check_ms:4.2f}x the plain check; {len(twin.instances)} instances "
              f"({len(twin.instances) - len(design.instances):+d} isolated)")
    forecast_ms = median_ms(lambda: seer.forecast(design))
    print(f"  forecast of `llama405b`                 {forecast_ms:7.1f} ms")
    for name in ("plane_b_down", "one_port", "one_uplink"):
        ms = median_ms(lambda: api.forecast(ws, scenario=name))
        print(f"  forecast under {name:<14}          {ms:7.1f} ms   "
              f"{ms / forecast_ms:4.2f}x the plain forecast")


if __name__ == "__main__":
    main()
