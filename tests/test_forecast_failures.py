"""What-ifs reach the forecast (issue 9, section 2): a failed share of a tier, a plane, a NIC
port, a ToR, an aggregation switch, a core switch and a link each slow exactly the collectives
whose traffic crosses them, by the share they take; the collective times are computed by hand
from the alpha-beta formulas (docs/seer.md, comm.py):

    ring all-reduce of S bytes over n ranks, one per host:
        t = BASE + 2 (n - 1) / n x S / (NET_EFF x B) + 2 (n - 1) x alpha
    double binary tree: t = BASE + 2 S / (NET_EFF x B) + 2 log2(n) x alpha
    alpha = NET_STEP + hops x SWITCH

with BASE = 7 us, NET_EFF = 0.9, NET_STEP = 5 us, SWITCH = 0.15 us (InfiniBand, the NIC's
default protocol) and B the NIC bandwidth of the slowest member: 2 ports x 200 Gb/s = 50 GB/s
healthy. The cheaper of the two is taken, as NCCL's tuner does (the hierarchical variant is the
ring for one rank per host); for 16 GB over 128 hosts that is the ring, for 64 hosts too."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.seer import comm
from astral_dsl.seer.lower import groups
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# 2 pods x 16 racks x 4 hosts x 8 GPUs = 1,024 H100s, 8 rails x 2 planes, dual-port 200G NICs.
# tor (per pod, rail, plane): 32 hosts each (32 x 200G down, 16 x 400G up), 2 per group;
# agg (per pod, rail, plane): 2 x 16 uplinks / 8 downlinks = 4 per group, every ToR reaching
# all 4 with 4 links (a full mesh); core (site): 2 pods x 16 groups x 4 aggs x 8 = 1,024 uplinks
# / 64 = 16 cores in 4 planes of 4 (agg l of every group reaches cores 4l..4l+3, 2 links each).
DESIGN = """\
import stdlib.hardware { H100_SXM, CX7_2x200G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack R { hosts = 4 x Node }
pod P { racks = 16 x R }
fabric F {
  rails = 8, planes = 2, dual_homing = true, max_oversubscription = 1
  tier tor { switch = Switch51T(power = 1 kW), scope = pod, per = [rail, plane]
    down = 32 x 200 Gb/s, up = 16 x 400 Gb/s }
  tier agg { switch = Switch51T(power = 1 kW), scope = pod, per = [rail, plane]
    down = 8 x 400 Gb/s, up = 8 x 400 Gb/s }
  tier core { switch = Switch51T(power = 1 kW), scope = site, down = 64 x 400 Gb/s }
}
site S { pods = 2 x P, fabric = F }
job site_dp {
  model = Llama3_8B, placement = S, gpus = 1024
  parallel { tp = 8, pp = 1, dp = 128 }
  batch { global_batch = 1024, micro = 1, seq = 8192 }
}
job pod_dp {
  model = Llama3_8B, placement = S.pods[1], gpus = 512
  parallel { tp = 8, pp = 1, dp = 64 }
  batch { global_batch = 512, micro = 1, seq = 8192 }
}
scenario half_agg { fail 50 % of S.fabric.agg }
scenario plane_b { fail S.fabric.plane[B] }
scenario port { fail S.pods[1].racks[0].hosts[0].nics[0].port[a] }
scenario other_pod_port { fail S.pods[0].racks[0].hosts[0].nics[0].port[a] }
scenario tor1 { fail S.fabric.pod[1].rail[0].plane[A].tor[1] }
scenario agg2 { fail S.fabric.pod[1].rail[0].plane[A].agg[2] }
scenario link { fail S.fabric.pod[1].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg[1] }
scenario core5 { fail S.fabric.core[5] }
scenario rail0_tors { fail S.fabric.rail[0].tor }
scenario both_tor1 { fail S.fabric.pod[0].rail[0].plane[A].tor[1]
  fail S.fabric.pod[0].rail[0].plane[B].tor[1] }
scenario aggs { fail S.fabric.pod[0].rail[0].plane[A].agg
  fail S.fabric.pod[0].rail[0].plane[B].agg }
scenario cores { fail S.fabric.core }
"""

S = 16e9                              # 16 GB: the fp32 gradients of 4 B parameters
PORT = 200e9 / 8                      # bytes/s of one 200 Gb/s port


def ring(n: int, bw: float, hops: int) -> float:
    """The hand formulas above: the ring, checked to be cheaper than the tree."""
    alpha = 5e-6 + hops * 0.15e-6
    t_ring = 7e-6 + 2 * (n - 1) / n * S / (0.9 * bw) + 2 * (n - 1) * alpha
    t_tree = 7e-6 + 2 * S / (0.9 * bw) + 2 * math.log2(n) * alpha
    assert t_ring < t_tree
    return t_ring


@pytest.fixture(scope="module")
def ws():
    return astral_dsl.compiles(DESIGN, name="failures.astral", root=REPO)


@pytest.fixture(scope="module")
def design(ws):
    d = ws.design
    assert d.valid, [x.message for x in d.diagnostics if x.is_error]
    return d


def dp_time(ws, job, scenario=None):
    fc = astral_dsl.forecast(ws, job=job, scenario=scenario).detail
    lays = groups(fc.job, fc.net)
    return fc, lays, comm.all_reduce(fc.net, lays["dp"], S)


# the whole site's DP group (128 hosts, both pods) climbs to the core: 5 switches
@pytest.mark.parametrize("scenario, bw", [
    (None, 2 * PORT),
    # 50 % of the aggs: a ToR's 16 x 400G uplinks keep 8: 32 x 200G / 8 x 400G = 2:1
    ("half_agg", 2 * PORT / 2),
    # plane B: every NIC keeps port a
    ("plane_b", PORT),
    # rank 512's NIC 0 (host 0 of pod 1) keeps port b: its DP group waits for it
    ("port", PORT),
    # ToR 1 of pod 1, rail 0, plane A: its 32 hosts' NIC 0 keep port b
    ("tor1", PORT),
    # 1 of the 4 aggs of (pod 1, rail 0, plane A): its ToRs keep 12 of 16 uplinks, 4:3; the
    # traffic is split evenly over the NIC's two ports and waits for the slower: 2 x 3/4 x 25
    ("agg2", 2 * PORT * 3 / 4),
    # ToR 0's 4 links to agg 1: 12 of its 16 uplinks left, as above for its 32 hosts
    ("link", 2 * PORT * 3 / 4),
    # core 5 (plane 1): agg 1 of every group keeps 6 of its 8 uplinks, 4:3 into the core
    ("core5", 2 * PORT * 3 / 4),
])
def test_site_dp_all_reduce_under_failures(ws, design, scenario, bw):
    fc, lays, t = dp_time(ws, "site_dp", scenario)
    dp = lays["dp"]
    assert (dp.n, dp.per_host, dp.hosts, dp.hops) == (128, 1, 128, 5)
    assert dp.net_bw == pytest.approx(bw, rel=1e-12)
    assert t == pytest.approx(ring(128, bw, 5), rel=1e-12)
    # TP runs on NVLink inside each host: no failure of the network reaches it
    base_tp = groups(fc.job, seer.forecast(design, job="site_dp").net)["tp"]
    assert lays["tp"] == base_tp and lays["tp"].hosts == 1


# pod 1's DP group (64 hosts) climbs only to the aggs: 3 switches; the core is not on its path
@pytest.mark.parametrize("scenario, bw", [
    (None, 2 * PORT), ("half_agg", PORT), ("plane_b", PORT), ("port", PORT), ("tor1", PORT),
    ("agg2", 1.5 * PORT), ("link", 1.5 * PORT),
    ("core5", 2 * PORT),              # its traffic never reaches the core
    ("other_pod_port", 2 * PORT),     # a port of pod 0: none of its ranks is behind it
])
def test_pod_dp_all_reduce_only_crosses_its_own_parts(ws, scenario, bw):
    _, lays, t = dp_time(ws, "pod_dp", scenario)
    assert (lays["dp"].n, lays["dp"].hops) == (64, 3)
    assert lays["dp"].net_bw == pytest.approx(bw, rel=1e-12)
    assert t == pytest.approx(ring(64, bw, 3), rel=1e-12)


def test_the_iteration_follows_the_collective(ws, design):
    base = seer.forecast(design, job="pod_dp")
    same = astral_dsl.forecast(ws, job="pod_dp", scenario="other_pod_port").detail
    assert same.iteration_time == base.iteration_time           # not one of its ranks
    agg = astral_dsl.forecast(ws, job="pod_dp", scenario="agg2").detail
    port = astral_dsl.forecast(ws, job="pod_dp", scenario="port").detail
    assert base.iteration_time < agg.iteration_time < port.iteration_time
    # the forecast says which part slows which group, and how many of the job's GPUs
    assert "dp: the slowest group runs at 25.00 GB/s per GPU instead of 50.00 GB/s " \
           "(`S.pods[1].racks[0].hosts[0].nics[0].port[a]` failed: 1 of the job's GPUs " \
           "behind it)" in port.notes
    assert any(n.startswith("dp: the slowest group runs at 37.50 GB/s") and
               "64 of the job's GPUs" in n for n in agg.notes)
    half = astral_dsl.forecast(ws, job="pod_dp", scenario="half_agg").detail
    assert any("tier `tor` oversubscribed 2:1 instead of 1:1" in n for n in half.notes)


@pytest.mark.parametrize("scenario", ["rail0_tors", "both_tor1", "aggs", "cores"])
def test_a_job_whose_ranks_lose_their_network_is_a_diagnostic(ws, scenario):
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(ws, job="site_dp", scenario=scenario)
    codes = [d.code for d in exc.value.diagnostics if d.is_error]
    assert codes == ["E775"], codes
    assert "lose their network" in exc.value.diagnostics[-1].message


# ---- the engineering checks see the same failures ----------------------------------------------
@pytest.fixture(scope="module")
def checked(ws):
    return {o.name: o for o in astral_dsl.check(ws, all_scenarios=True).scenarios}


@pytest.mark.parametrize("scenario, code, message", [
    # rail 0's ToRs on both planes: NIC 0 of all 128 hosts is dark: GPU 0 of each
    ("rail0_tors", "E616", "128 GPUs lose every NIC port: cut off from the network"),
    # ToR 1 of both planes (rail 0, pod 0): its 32 hosts' NIC 0
    ("both_tor1", "E616", "32 GPUs lose every NIC port: cut off from the network"),
    # every agg of rail 0 in pod 0: GPU 0 of its 64 hosts reaches only its own ToR
    ("aggs", "E617", "64 GPUs lose every path into tier `agg`"),
    # no core: every GPU reaches only its own pod
    ("cores", "E617", "1,024 GPUs lose every path into tier `core`"),
    # one agg of 4: the ToRs under it run 16 / 12 = 4:3, above the declared 1:1
    ("agg2", "E602", "tier `tor` runs 1.3333:1 into `agg`"),
    ("core5", "E602", "tier `agg` runs 1.3333:1 into `core`"),
])
def test_the_checks_report_what_the_failure_breaks(checked, scenario, code, message):
    o = checked[scenario]
    assert [d.code for d in o.broken] == [code]
    assert o.broken[0].message.startswith(message), o.broken[0].message


def test_a_dual_homed_nic_on_one_port_is_in_the_notes(checked):
    assert not checked["port"].broken
    assert "1 NIC runs on 1 of 2 ports (`S.pods[1].racks[0].hosts[0].nics[0].port[a]` failed)" \
        in checked["port"].notes
    assert "32 NICs run on 1 of 2 ports (`S.fabric.pod[1].rail[0].plane[A].tor[1]` failed)" \
        in checked["tor1"].notes


def test_failed_switches_are_off(checked, ws):
    base = astral_dsl.check(ws).engineering.network_w
    # 8 rails x 2 planes x 2 pods x (2 tors + 4 aggs) + 16 cores = 208 switches of 1 kW (no
    # optics declared); a failed switch draws nothing
    assert base == pytest.approx(208_000)
    assert checked["core5"].result.network_w == pytest.approx(base - 1_000)
    assert checked["tor1"].result.network_w == pytest.approx(base - 1_000)
    # plane B: 32 tors and 64 aggs; the cores serve both planes
    assert checked["plane_b"].result.network_w == pytest.approx(base - 96_000)
    # half the aggs: 64 of 128
    assert checked["half_agg"].result.network_w == pytest.approx(base - 64_000)
    assert "1 `core` switch off: 1.0 kW less network power" in checked["core5"].notes
    assert "64 `agg` switches off: 64.0 kW less network power" in checked["half_agg"].notes


def test_a_single_failure_stays_symbolic():
    """Failing one switch or one NIC port of the 524,288-GPU reference isolates a few instances
    (the route to the NIC), never the replicas."""
    from astral_dsl.analyses import scenarios as scen
    from astral_dsl.analyses.engineering import analyse

    text = (REPO / "examples" / "astral.astral").read_text() + (
        "scenario tor { fail Astral.fabric.pod[3].rail[4].plane[A].tor[17] }\n"
        "scenario port { fail Astral.pods[3].rows[5].racks[2].hosts[1].nics[4].port[b] }\n")
    ws = astral_dsl.compiles(text, name="astral.astral", root=REPO / "examples")
    design = ws.design
    # the ToR: the fabric and its 3 tiers are copied; the port: the pod, row, rack, host and
    # NIC on its route, with what the pod and the row own (loop, air unit, 2 feeders)
    for name, extra in (("tor", 4), ("port", 9)):
        scenario = next(s for s in design.scenarios if s.template == name)
        twin = ws.under(scenario)
        assert len(twin.instances) - len(design.instances) <= extra
        applied = scen.apply(twin, next(s for s in twin.scenarios if s.template == name))
        eng = analyse(twin, applied)
        (fabric,) = eng.fabrics
        # one ToR: its 128 hosts (hosts 2,176..2,303 of pod 3) keep port b of NIC 4;
        # one port: that one NIC
        assert (f"128 NICs run on 1 of 2 ports" if name == "tor" else
                "1 NIC runs on 1 of 2 ports") in " ".join(eng.notes)


# ---- the CLI: no E000, the scenario in the JSON -------------------------------------------------
def _cli(*args):
    return _astral_cli(*args, cwd=REPO, text=False)


def test_the_forecast_json_carries_the_scenario(tmp_path):
    path = tmp_path / "failures.astral"
    path.write_text(DESIGN)
    proc = _cli("forecast", str(path), "--job", "pod_dp", "--scenario", "agg2", "--format", "json")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    doc = json.loads(proc.stdout)
    assert doc["scenario"] == {
        "name": "agg2",
        "failed": [{"target": "S.fabric.pod[1].rail[0].plane[A].agg[2]", "kind": "switch",
                    "replicas": None}],
        "changed": [], "notes": ["S.fabric.pod[1].rail[0].plane[A].agg[2] failed"]}
    proc = _cli("forecast", str(path), "--job", "site_dp", "--scenario", "cores")
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "E000" not in out and "error[E775]" in out
    plain = json.loads(_cli("forecast", str(path), "--job", "pod_dp", "--format",
                            "json").stdout)
    assert plain["scenario"] is None


# ---- the job's last host partly the job's: a DP group of 9 on hosts of 8 ---------------------
# ranks 0-7 on host 0, rank 8 on host 1's GPU 0 (NIC 0); host 1's GPUs 1-7 are not the job's
PARTIAL = DESIGN.split("job site_dp")[0] + """\
job dp9 {
  model = Llama3_8B, placement = S.pods[1], gpus = 9
  parallel { tp = 1, pp = 1, dp = 9, zero = 3 }
  batch { global_batch = 9, micro = 1, seq = 4096 }
}
scenario plane_b { fail S.fabric.plane[B] }
scenario host1_nic3 { fail S.pods[1].racks[0].hosts[1].nics[3].port[a] }
"""


@pytest.fixture(scope="module")
def partial_ws():
    return astral_dsl.compiles(PARTIAL, name="partial.astral", root=REPO)


def test_the_gpus_behind_a_failure_are_the_jobs_own(partial_ws):
    # plane B: every NIC keeps port a (25 GB/s of 50); behind it the job's 8 GPUs of host 0
    # and the 1 of host 1: 9, not host 1's 8 (16)
    fc = astral_dsl.forecast(partial_ws, job="dp9", scenario="plane_b").detail
    assert "dp: the slowest group runs at 25.00 GB/s per GPU instead of 50.00 GB/s " \
           "(`S.fabric.plane[B]` failed: 9 of the job's GPUs behind it)" in fc.notes
    assert groups(fc.job, fc.net)["dp"].net_bw == pytest.approx(PORT, rel=1e-12)


# the same job in 3 stages, on a site of 2 racks under two site-wide tiers
PIPELINE = re.sub(r"  tier agg .*\n.*\n  tier core [^\n]*", "  tier agg { switch = Switch51T(power "
                  "= 1 kW), scope = site, down = 64 x 400 Gb/s }", PARTIAL, flags=re.M).replace(
    "scope = pod", "scope = site").replace("pods = 2 x P", "racks = 2 x R").replace(
    "S.pods[1]", "S").replace("pp = 1, dp = 9, zero = 3", "pp = 3, dp = 3, zero = 1") + """\
scenario mixed { fail S.racks[0].hosts[0].nics[7].port[a]
  fail S.racks[0].hosts[1].nics[3].port[a]
  fail S.racks[0].hosts[1].nics[3].port[b] }
"""


@pytest.mark.parametrize("text", [PARTIAL, PIPELINE], ids=["dp", "pipeline"])
def test_a_failure_behind_only_other_gpus_of_the_last_host_does_not_slow_the_job(text):
    # host 1's NIC 3 carries its GPU 3, not the job's: rank 8 is its GPU 0, on NIC 0; neither
    # the DP groups nor the pipeline's pairs (boundary 1 -> 2 reaches host 1) slow down
    ws = astral_dsl.compiles(text, name="partial.astral", root=REPO)
    base = astral_dsl.forecast(ws, job="dp9").detail
    fc = astral_dsl.forecast(ws, job="dp9", scenario="host1_nic3").detail
    assert groups(fc.job, fc.net) == groups(base.job, base.net)
    assert fc.iteration_time == base.iteration_time
    assert not any("behind it" in n for n in fc.notes)


def test_the_pipelines_pairs_see_only_the_jobs_gpus_of_the_last_host():
    # stages of 3 ranks: boundary 1 -> 2 pairs ranks 3-5 with 6-8 (rank 8: host 1's GPU 0);
    # host 1's NIC 3 is cut off but carries none of them: not E775; rank 7's NIC 7 keeps
    # port b, 1 x 25 GB/s of its 2 x 25
    ws = astral_dsl.compiles(PIPELINE, name="pipeline.astral", root=REPO)
    fc = astral_dsl.forecast(ws, job="dp9", scenario="mixed").detail
    assert "pp: the pairs of stages 1 -> 2 (a boundary's transfers wait for its slowest pair) " \
           "run at 25.00 GB/s per GPU instead of 50.00 GB/s " \
           "(`S.racks[0].hosts[0].nics[7].port[a]` failed: 1 GPU of these pairs' hosts " \
           "behind it)" in fc.notes
