"""The rank map: hand-worked ranks on the reference design, the single-pod example and a small
design; Megatron-Core's rank order; group paths; stable names; `astral forecast --ranks`."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses import rankmap
from astral_dsl.analyses.fabric_names import TierKey
from astral_dsl.diagnose import rank_map
from clirun import astral as _astral_cli  # noqa: E402
from jobtext import job

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"


@pytest.fixture(scope="module")
def pod_map():
    return rank_map(astral_dsl.load(str(REPO / "examples" / "single_pod.astral")))


@pytest.fixture(scope="module")
def reference_map():
    return rank_map(astral_dsl.load(str(REPO / "examples" / "astral.astral")))


def test_megatron_order():
    sizes = {"tp": 8, "cp": 1, "ep": 1, "dp": 32, "pp": 4}
    # tp-cp-ep-dp-pp: rank = tp + 8 (dp + 32 pp)
    assert rankmap.coordinates(300, sizes, rankmap.parse_order(None)) == \
        {"tp": 4, "cp": 0, "ep": 0, "dp": 5, "pp": 1}
    # pp before dp: rank = tp + 8 (pp + 4 dp)
    assert rankmap.coordinates(300, sizes, rankmap.parse_order("tp-cp-ep-pp-dp")) == \
        {"tp": 4, "cp": 0, "ep": 0, "dp": 9, "pp": 1}
    # the ep coordinate is the expert numbering's (expert tensor parallelism 1, TP folded in):
    # rank = ep + 4 edp, EDP = tp dp / ep = 2 x 8 / 4 = 4: rank 11 -> ep 3 (edp 2); the dense
    # coordinates as before: rank = tp + 2 dp -> tp 1, dp 5
    sizes = {"tp": 2, "cp": 1, "ep": 4, "dp": 8, "pp": 1}
    assert rankmap.coordinates(11, sizes, rankmap.parse_order(None)) == \
        {"tp": 1, "cp": 0, "ep": 3, "dp": 5, "pp": 0}
    with pytest.raises(rankmap.RankMapError):
        rankmap.parse_order("tp-dp-pp")


TP_CP_EP = job("tcp", "TinyMoE", 16, "tp = 2, cp = 2, pp = 1, dp = 4, ep = 4",
               "global_batch = 16, micro = 1, seq = 2048")


def test_expert_groups_are_megatron_cores_and_seers():
    """tp 2, cp 2, dp 4, ep 4 (16 ranks) on moe.astral's racks. Megatron-Core 0.16.1's
    generators (parallel_state.RankGenerator, order tp-cp-ep-dp-pp): dense rank = tp + 2 cp +
    4 dp; expert (tp 1, cp 1, ep 4, dp = 2 x 4 x 2 / 4 = 4) rank = ep + 4 edp, so an EP group is
    4 consecutive ranks. The rank map's groups (diagnose, synth) and Seer's (comm_groups) are
    both these lists: one numbering (analyses/rank_order.py)."""
    from astral_dsl.seer.ranks import RankOrder
    from astral_dsl.seer.spec import ParallelSpec

    design = astral_dsl.loads((SMALL.parent / "moe.astral").read_text() + TP_CP_EP,
                              name="moe.astral", root=SMALL.parent)
    rm = rank_map(design, "tcp")
    want = {"tp": [(2 * i, 2 * i + 1) for i in range(8)],
            "cp": [(0, 2), (1, 3), (4, 6), (5, 7), (8, 10), (9, 11), (12, 14), (13, 15)],
            "dp": [(0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)],
            "ep": [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15)],
            "pp": [(r,) for r in range(16)]}
    assert {k: [g.ranks for g in rm.groups[k]] for k in want} == want
    par = ParallelSpec(tp=2, cp=2, dp=4, ep=4)
    seer_groups = {k: sorted({tuple(RankOrder(par, experts=k == "ep").group(k, r))
                              for r in range(16)}) for k in want}
    assert seer_groups == want
    assert dict(rm.ranks[6].coords) == {"tp": 0, "cp": 1, "ep": 2, "dp": 1, "pp": 0}


def test_single_pod_ranks(pod_map):
    """32 hosts per row (8 racks of 4), 64 host ports per ToR: host h is on ToR h // 64."""
    rm = pod_map
    assert rm.world == 1024 and rm.fabric == "Lab.pods[0].fabric"
    r = rm.ranks[300]          # tp 4, dp 5, pp 1 -> host 37 = rows[1].racks[1].hosts[1], GPU 4
    assert dict(r.coords) == {"tp": 4, "cp": 0, "ep": 0, "dp": 5, "pp": 1}
    assert r.gpu == "Lab.pods[0].rows[1].racks[1].hosts[1].gpus[4]"
    assert [p.name for p in r.ports] == [
        "Lab.pods[0].rows[1].racks[1].hosts[1].nics[4].port[a]",
        "Lab.pods[0].rows[1].racks[1].hosts[1].nics[4].port[b]"]
    assert [p.switch for p in r.ports] == ["Lab.pods[0].fabric.rail[4].plane[A].tor[0]",
                                           "Lab.pods[0].fabric.rail[4].plane[B].tor[0]"]
    last = rm.ranks[1023]      # host 127 -> rows[3].racks[7].hosts[3], ToR 1
    assert last.gpu == "Lab.pods[0].rows[3].racks[7].hosts[3].gpus[7]"
    assert last.ports[0].switch == "Lab.pods[0].fabric.rail[7].plane[A].tor[1]"
    assert rm.group("tp", 300).ranks == tuple(range(296, 304))
    assert rm.group("dp", 300).ranks == tuple(256 + 4 + 8 * d for d in range(32))
    assert rm.group("pp", 300).ranks == (44, 300, 556, 812)


def test_single_pod_paths(pod_map):
    rm = pod_map
    tp = rm.path(rm.group("tp", 0).ranks)                     # one host: NVLink
    assert tp.hosts == ("Lab.pods[0].rows[0].racks[0].hosts[0]",) and not tp.switches
    dp = rm.path(rm.group("dp", 300).ranks)                   # hosts 32-63: one ToR per plane
    assert dp.switches == ("Lab.pods[0].fabric.rail[4].plane[A].tor[0]",
                           "Lab.pods[0].fabric.rail[4].plane[B].tor[0]")
    assert dp.tiers == () and len(dp.ports) == 64
    pp = rm.path((300, 556))                                  # host 37 -> host 69: across ToRs
    assert pp.tiers == ("Lab.pods[0].fabric.rail[4].plane[A].agg",
                        "Lab.pods[0].fabric.rail[4].plane[B].agg")
    assert ("Lab.pods[0].fabric.rail[4].plane[A].tor[1] -- "
            "Lab.pods[0].fabric.rail[4].plane[A].agg") in pp.links
    assert ("Lab.pods[0].rows[1].racks[1].hosts[1].nics[4].port[a] -- "
            "Lab.pods[0].fabric.rail[4].plane[A].tor[0]") in pp.links


def test_reference_ranks(reference_map):
    """The fabric belongs to the site: ToR names carry the pod. 64 hosts per row, 128 host
    ports per ToR: host h of pod 0 is on ToR h // 128."""
    rm = reference_map
    assert rm.world == 16384
    r = rm.ranks[1024]                    # tp 0, dp 0, pp 1 -> host 128 = rows[2].racks[0]
    assert r.gpu == "Astral.pods[0].rows[2].racks[0].hosts[0].gpus[0]"
    assert r.ports[1].switch == "Astral.fabric.pod[0].rail[0].plane[B].tor[1]"
    r = rm.ranks[16383]                   # host 2047 -> rows[31].racks[15].hosts[3], ToR 15
    assert r.gpu == "Astral.pods[0].rows[31].racks[15].hosts[3].gpus[7]"
    assert r.ports[0].switch == "Astral.fabric.pod[0].rail[7].plane[A].tor[15]"
    assert rm.path(rm.group("pp", 0).ranks).tiers == (
        "Astral.fabric.pod[0].rail[0].plane[A].agg", "Astral.fabric.pod[0].rail[0].plane[B].agg")


def test_small_design_and_determinism():
    design = astral_dsl.load(str(SMALL))
    rm = rank_map(design)
    assert rm.ranks[64].gpu == "Small.racks[2].hosts[0].gpus[0]"
    assert rm.ranks[64].ports[0].switch == "Small.fabric.rail[0].plane[A].tor[1]"
    assert rm.ranks[63].ports[1].switch == "Small.fabric.rail[7].plane[B].tor[0]"
    a = json.dumps(rm.to_json())
    b = json.dumps(rank_map(astral_dsl.load(str(SMALL))).to_json())
    assert a == b


def test_forecast_ranks_cli(tmp_path):
    out = tmp_path / "ranks.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = _astral_cli("forecast", str(SMALL), "--ranks", str(out), "--format", "json",
                       env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["world_size"] == 128 and doc["order"] == "tp-cp-ep-dp-pp"
    r = doc["ranks"][127]
    assert r["gpu"] == "Small.racks[3].hosts[3].gpus[7]" and r["stage"] == 1
    assert r["nic_ports"][0] == {
        "port": "Small.racks[3].hosts[3].nics[7].port[a]", "rail": 7, "plane": "A",
        "switch": "Small.fabric.rail[7].plane[A].tor[1]",
        "link": "Small.racks[3].hosts[3].nics[7].port[a] -- Small.fabric.rail[7].plane[A].tor[1]"}
    pp0 = doc["groups"]["pp"][0]
    assert pp0["ranks"] == [0, 64]
    assert pp0["path"]["tiers"] == ["Small.fabric.rail[0].plane[A].agg",
                                    "Small.fabric.rail[0].plane[B].agg"]


def test_forecast_ranks_writes_the_document_a_part_at_a_time(tmp_path, monkeypatch, capsys):
    """`--ranks` built the whole document (RankMap.to_json) and its whole text before writing
    them: 5.7 GB of memory for the reference design's 524,288 ranks, its map 1.2 GB of it. It
    writes each rank's and each group's part in turn now, the same bytes as the whole
    document's text."""
    from astral_dsl import cli
    from astral_dsl.outputs.jsonout import dumps

    design = astral_dsl.load(str(SMALL))
    whole = dumps(rank_map(design).to_json()) + "\n"

    def built(self, paths=True):
        raise AssertionError("the whole rank map document was built")

    monkeypatch.setattr(rankmap.RankMap, "to_json", built)
    out = tmp_path / "ranks.json"
    assert cli.main(["forecast", str(SMALL), "--ranks", str(out), "--format", "json"]) == 0
    assert out.read_text(encoding="utf-8") == whole


def test_declared_order_is_followed():
    text = SMALL.read_text().replace("parallel { tp = 8, pp = 2, dp = 8 }",
                                     'parallel { tp = 8, pp = 2, dp = 8, order = "tp-cp-ep-pp-dp" }')
    rm = rank_map(astral_dsl.loads(text, name=str(SMALL)))
    assert rm.order == ("tp", "cp", "ep", "pp", "dp")
    assert rm.group("pp", 0).ranks == (0, 8)           # pp before dp: neighbours on two hosts
    assert rm.group("dp", 0).ranks == tuple(range(0, 128, 16))


def test_a_group_climbing_two_tiers_crosses_the_middle_one():
    """B2: tp = 16 puts a TP group on two hosts, its GPUs on all 8 rails: they meet only at
    the core, so the path climbs through each rail's aggregation group (per plane) first.
    Tier sizes: 4 ToRs (8 hosts of 32 per ToR), 2 aggs (16 uplinks of 400G into 8-port aggs),
    4 core switches: the uplinks end at groups (ECMP)."""
    from astral_dsl.synth.network import Net

    text = SMALL.read_text().replace("parallel { tp = 8, pp = 2, dp = 8 }",
                                     "parallel { tp = 16, pp = 2, dp = 4 }")
    rm = rank_map(astral_dsl.loads(text, name=str(SMALL)))
    rail0 = {"rail": 0, "plane": 0}         # ToRs and aggs per rail and plane, the core whole
    assert [rm.size_of(TierKey("Small.fabric", t, **w)) for t, w in
            (("tor", rail0), ("agg", rail0), ("core", {}))] == [4, 2, 4]
    p = rm.path(rm.group("tp", 0).ranks)
    assert p.tiers == ("Small.fabric.core",) + tuple(
        f"Small.fabric.rail[{r}].plane[{x}].agg" for r in range(8) for x in "AB")
    assert "Small.fabric.rail[3].plane[B].tor[0] -- Small.fabric.rail[3].plane[B].agg" in p.links
    assert "Small.fabric.rail[3].plane[B].agg -- Small.fabric.core" in p.links
    assert not any(link.endswith("tor[0] -- Small.fabric.core") for link in p.links)
    # the generator's flows climb the same way: rank 0 (rail 0) to rank 9 (rail 1), port a:
    # an agg of each side, then one core switch (listed for both sides)
    flow = Net(rm, (), 0).route(0, 9)[0]
    tiers = [x for x in flow if " -- " not in x and (".agg[" in x or ".core[" in x)]
    assert [t.split(".")[-1].split("[")[0] for t in tiers] == ["agg", "agg", "core", "core"]
    assert "Small.fabric.rail[0].plane[A].agg[" in tiers[0] and \
        "Small.fabric.rail[1].plane[A].agg[" in tiers[1]


def test_group_paths_list_hosts_in_the_design_order(reference_map):
    """A group's hosts (and switches) in the design's order, indices compared as numbers: the
    first dp group of the reference job is hosts 0-127 of pod 0 (16 racks of 4 per row), so
    racks[2] comes before racks[10], as a string sort would not put it."""
    rm = reference_map
    dp = rm.path(rm.group("dp", 0).ranks)
    assert dp.hosts == tuple(f"Astral.pods[0].rows[{h // 64}].racks[{h % 64 // 4}]"
                             f".hosts[{h % 4}]" for h in range(128))
    assert sorted(["S.racks[10].hosts[0]", "S.racks[1].hosts[10]", "S.racks[1].hosts[3]"],
                  key=rankmap.natural) == ["S.racks[1].hosts[3]", "S.racks[1].hosts[10]",
                                           "S.racks[10].hosts[0]"]


def test_an_nvl72_racks_groups_run_on_its_nvlink():
    """An NVL72 rack (`nvlink_domain = rack`) is one NVLink domain of 18 trays: a group inside
    it crosses no NIC, no switch (Seer prices it on NVLink alike, seer/cluster.py); between the
    racks it crosses the trays' NICs. Ranks 0, 4, ..., 68 (rank = tp + 4 dp, pp 0: dp group 0)
    are on GPUs 0-68 of rack 0's 72, trays 0-17; ranks 0 and 72 (pp group 0) are GPU 0 of each
    rack. The DP group's units: the rack's trays and each member GPU's NVLink port (another
    member in its domain: the ring runs over it)."""
    from astral_dsl.diagnose.units import channel_units

    design = astral_dsl.load(str(REPO / "tests" / "fixtures" / "diagnose" / "nvl72.astral"))
    rm = rank_map(design)
    dp = rm.groups["dp"][0]
    assert dp.ranks == tuple(range(0, 72, 4))
    path = rm.path(dp.ranks)
    assert path.hosts == tuple(f"Lab.racks[0].hosts[{i}]" for i in range(18))
    assert (path.ports, path.links, path.switches, path.tiers) == ((), (), (), ())
    trays = "|".join(str(i) for i in range(18))
    assert channel_units(rm, dp.ranks) == {
        ("host", f"Lab.racks[0].hosts[{trays}]"): path.hosts} | {
        ("nvlink", f"Lab.racks[0].hosts[{i}].gpus[0]"): (f"Lab.racks[0].hosts[{i}].gpus[0]",)
        for i in range(18)}
    pp = rm.path(rm.groups["pp"][0].ranks)
    assert rm.groups["pp"][0].ranks == (0, 72)
    assert pp.ports == ("Lab.racks[0].hosts[0].nics[0].port[a]",
                        "Lab.racks[1].hosts[0].nics[0].port[a]")
    assert rm.ranks[72].domain == "Lab.racks[1]" and rm.ranks[0].domain == "Lab.racks[0]"


def test_a_placement_on_a_range_takes_every_replica_of_it():
    """`placement = Small.racks[4..7]`: the rank map walks racks 4, 5, 6 and 7 (16 hosts, 128
    GPUs), not only the shared instance's first replica (which held 32 GPUs: "the placement
    holds 32 GPUs, the job needs 128"). 8 hosts per ToR: racks 4-5 are hosts 16-23 (tor[2]),
    racks 6-7 hosts 24-31 (tor[3])."""
    text = SMALL.read_text().replace("placement = Small\n", "placement = Small.racks[4..7]\n")
    rm = rank_map(astral_dsl.loads(text, name=str(SMALL)))
    assert len(rm.ranks) == 128
    assert rm.ranks[0].gpu == "Small.racks[4].hosts[0].gpus[0]"
    assert rm.ranks[0].ports[0].switch == "Small.fabric.rail[0].plane[A].tor[2]"
    assert rm.ranks[127].gpu == "Small.racks[7].hosts[3].gpus[7]"
    assert rm.ranks[127].ports[0].switch == "Small.fabric.rail[7].plane[A].tor[3]"
