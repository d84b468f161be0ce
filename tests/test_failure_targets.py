"""What a `fail` can name in the fabric, and what the checks and the forecast say about it
(issue 9): switches, tier groups, NIC ports and links by the stable names of the rank map;
fabric failures reported by `astral check` (no more "holds" for a rail that is gone) and by the
forecast (a diagnostic, never E000); power failures in the forecast; group targets counted."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_forecast_failures import DESIGN  # noqa: E402


def _cli(*args, cwd=REPO):
    return _astral_cli(*args, cwd=cwd, text=False)


def _check(text, *scenarios):
    ws = astral_dsl.compiles(text, name="t.astral", root=REPO)
    design = ws.design
    return design, astral_dsl.check(ws, list(scenarios))


# ---- the rank map's names are fail targets ----------------------------------------------------
def test_names_from_the_rank_map_can_be_failed(tmp_path):
    """docs/diagnose.md: the stable names of `astral forecast --ranks` can be written as a
    scenario's `fail` target. Take a port, its link, its ToR, the ToR's uplinks and the tier
    group above from the rank map of pod 1's job, fail each, and check what it does."""
    path = tmp_path / "f.astral"
    path.write_text(DESIGN)
    out = tmp_path / "ranks.json"
    proc = _cli("forecast", str(path), "--job", "pod_dp", "--ranks", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    ranks = json.loads(out.read_text())
    port = ranks["ranks"][0]["nic_ports"][0]
    assert port["port"] == "S.pods[1].racks[0].hosts[0].nics[0].port[a]"
    dp = ranks["groups"]["dp"][0]["path"]
    uplink = next(l for l in dp["links"] if l.startswith(port["switch"] + " -- "))
    names = {"port": port["port"], "host link": port["link"], "switch": port["switch"],
             "uplinks": uplink, "tier group": dp["tiers"][0]}
    assert names["tier group"] == "S.fabric.pod[1].rail[0].plane[A].agg"
    text = DESIGN + "".join(f"scenario s{i} {{ fail {name} }}\n"
                            for i, name in enumerate(names.values()))
    design, checked = _check(text, *[f"s{i}" for i in range(len(names))])
    assert design.valid, [d.message for d in design.diagnostics if d.is_error]
    by = {o.name: o for o in checked.scenarios}
    notes = {what: " | ".join(by[f"s{i}"].notes) for i, what in enumerate(names)}
    # a port or its link: that NIC runs on port b
    assert "1 NIC runs on 1 of 2 ports" in notes["port"]
    assert "1 NIC runs on 1 of 2 ports" in notes["host link"]
    # its ToR: the ToR's 32 hosts keep port b of NIC 0
    assert "32 NICs run on 1 of 2 ports" in notes["switch"] and "1 `tor` switch off" in \
        notes["switch"]
    # the ToR's uplinks: its 32 hosts' traffic above it runs on port b alone
    assert "32 NICs run at 50 % of their bandwidth" in notes["uplinks"]
    # the agg group: the hosts of (pod 1, rail 0, plane A) climb through plane B only
    assert "64 NICs run at 50 % of their bandwidth" in notes["tier group"]
    assert "4 `agg` switches off" in notes["tier group"]
    # no naming error anywhere
    assert not [d for d in checked.diagnostics if d.code in ("E214", "E219", "E303")]


@pytest.mark.parametrize("target", [
    "S.fabric.tor[0]",
    "S.pods[0].racks[0].hosts[0].nics[0].port[a] -- S.fabric.pod[0].rail[0].plane[A].tor[1]"])
def test_the_hint_names_the_rank_map_as_the_command_takes_it(target):
    # `astral forecast --ranks` alone is a usage error ("expected one argument"): the option
    # takes the file the rank map is written to
    _, checked = _check(DESIGN + f"scenario bad {{ fail {target} }}\n", "bad")
    (error,) = [d for d in checked.diagnostics if d.is_error]
    assert "`astral forecast FILE --ranks ranks.json` writes" in error.hint, error.hint
    assert "--ranks`" not in error.hint


@pytest.mark.parametrize("target, code, message", [
    ("S.fabric.tor[0]", "E219", "`S.fabric.tor[0]` names a switch of every `tor` group: name its "
                                "pod, rail, plane too"),
    ("S.fabric.pod[0].rail[0].plane[A].tor[7]", "E214", "switch 7 is out of range: each `tor` "
                                                        "group has 2 switches (0 to 1)"),
    ("S.fabric.pod[5].rail[0].plane[A].tor[0]", "E214", "pod 5 is out of range: `S` holds 2 "
                                                        "pods (0 to 1)"),
    ("S.pods[0].racks[0].hosts[0].nics[0].port[a] -- S.fabric.pod[0].rail[0].plane[A].tor[1]",
     "E219", "is not wired to `S.fabric.pod[0].rail[0].plane[A].tor[1]`"),
    ("S.fabric.pod[0].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg",
     "E219", "has no link to `S.fabric.pod[1].rail[0].plane[A].agg`"),
    ("25 % of S.fabric.tor", "E219", "a share of the first tier does not say which hosts lose "
                                     "their ports"),
])
def test_a_wrong_name_is_an_error_of_its_own(target, code, message):
    """Not a warning folded into W680: the scenario itself is wrong."""
    _, checked = _check(DESIGN + f"scenario bad {{ fail {target} }}\n", "bad")
    errors = [d for d in checked.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code], [d.message for d in errors]
    assert message in errors[0].message
    assert errors[0].span is not None and errors[0].span.start.line == DESIGN.count("\n") + 1
    assert not [d for d in checked.diagnostics if d.code == "W680"]
    # a rejected failure fails nothing: no switch off, the network's power that of the design
    # (64 ToRs + 128 aggs + 16 cores of 1 kW, no optics power declared: 208 kW)
    (outcome,) = checked.scenarios
    assert not [n for n in outcome.notes if " off" in n], outcome.notes
    # nor is it said failed: not in the notes, not among the parts failed, not out of service
    assert not [n for n in outcome.notes if "failed" in n], outcome.notes
    assert outcome.applied.named == () and outcome.applied.fabric_failed == ()
    assert outcome.applied.tier_failures == ()
    assert outcome.result.network_w == pytest.approx(208e3)


BLOCKS = """\
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }
switch Sw { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x H }
block B { racks = 8 x R }
fabric F {
  rails = 8, planes = 1, max_oversubscription = 1
  tier leaf { switch = Sw, scope = block, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { sus = 4 x B, fabric = F }
scenario bad { fail S.fabric.rail[3].leaf[0] }
"""


def test_the_hint_of_a_switch_without_its_group_names_the_tiers_scope_and_the_rail_given():
    """A `block`-scoped tier's groups are `block[i]` in the rank map: the hint said
    `S.fabric.row[0].rail[0].leaf[0]` under a message asking for the block, and dropped the
    rail the target named (3)."""
    _, checked = _check(BLOCKS, "bad")
    (error,) = [d for d in checked.diagnostics if d.is_error]
    assert error.code == "E219"
    assert error.message == ("`S.fabric.rail[3].leaf[0]` names a switch of every `leaf` "
                             "group: name its block too")
    assert error.hint.startswith("e.g. `S.fabric.block[0].rail[3].leaf[0]` ")


def _errors(text):
    design = astral_dsl.loads(text, name="t.astral", root=REPO)
    return [d for d in design.diagnostics if d.is_error]


def test_a_tier_asked_of_a_block_is_named_under_the_fabric():
    """`fail S.sus[1].leaf` was E209 "block `B` has no member `leaf`" with no hint: the leaf
    switches are the fabric's, named by the tier's group (fabric_layout.example_group, as
    E219's hint names them: the scope as the tier declares it, rail 0 for a tier split by rail)."""
    (error,) = _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]", "fail S.sus[1].leaf"))
    assert (error.code, error.message) == ("E209", "block `B` has no member `leaf`")
    assert error.hint == ("`leaf` is a switch tier of the fabric `S.fabric`: its switches are "
                          "named under the fabric, by the tier's group, e.g. "
                          "`S.fabric.block[0].rail[0].leaf`; blocks are counted across `S` "
                          "(`astral forecast FILE --ranks ranks.json` writes the stable names)")
    # the form the hint gives is a target the scenario takes
    assert _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]",
                                  "fail S.fabric.block[0].rail[0].leaf")) == []
    # a tier of the site (scope = site: the fabric's owner) has no group to name but its rail
    (error,) = _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]", "fail S.sus[0].spine"))
    assert "e.g. `S.fabric.spine`;" not in error.hint
    assert error.hint.startswith("`spine` is a switch tier of the fabric `S.fabric`: its "
                                 "switches are named under the fabric, by the tier's group, "
                                 "e.g. `S.fabric.spine` (")
    # a member that names no tier keeps its own hint (none here, or the closest name)
    (error,) = _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]", "fail S.sus[0].lef"))
    assert error.code == "E209" and "switch tier" not in (error.hint or "")


def test_a_pod_fabrics_tier_is_named_under_the_pods_fabric():
    """A fabric of each pod: the tier's scope is the pod, its owner, so the group is named by
    rail and plane alone, under the pod's fabric as the target wrote the pod."""
    text = DESIGN.replace("pod P { racks = 16 x R }", "pod P { racks = 16 x R\n"
                          "  fabric pf { rails = 8, planes = 2\n"
                          "    tier ptor { switch = Switch51T, scope = pod, per = [rail, plane],"
                          " down = 32 x 200 Gb/s } } }")
    (error,) = _errors(text + "scenario bad { fail S.pods[1].racks[0].ptor }\n")
    assert error.code == "E209"
    assert "e.g. `S.pods[1].pf.rail[0].plane[A].ptor` (" in error.hint


def test_rejected_parts_beside_a_good_one_fail_nothing():
    """Rejected targets (E214: pod 5 of 2; E219: a port not wired to that ToR, a share of the
    first tier) were still "X failed" in the notes and "out of service" in the report's matrix.
    Beside them, `S.fabric.core[5]` alone fails: 1 of the 16 cores, so the network's power is
    208 kW (64 ToRs + 128 aggs + 16 cores of 1 kW) - 1 kW = 207 kW."""
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import matrix as mx
    from astral_dsl.pipeline_scenarios import scenario_twin

    text = DESIGN + ("scenario mix {\n  fail S.fabric.pod[5].rail[0].plane[A].tor[0]\n"
                     "  fail 25 % of S.fabric.tor\n  fail S.fabric.core[5]\n"
                     "  fail S.pods[0].racks[0].hosts[0].nics[0].port[a] -- "
                     "S.fabric.pod[0].rail[0].plane[A].tor[1]\n}\n")
    ws = astral_dsl.compiles(text, name="t.astral", root=REPO)
    checked = astral_dsl.check(ws, ["mix"])
    assert sorted(d.code for d in checked.diagnostics if d.is_error) == ["E214", "E219", "E219"]
    (o,) = checked.scenarios
    assert o.notes[0] == "S.fabric.core[5] failed"
    assert [n for n in o.notes if " off" in n] == [
        "1 `core` switch off: 1.0 kW less network power"], o.notes
    assert not [n for n in o.notes if "pod[5]" in n or "tor" in n or "port[a]" in n], o.notes
    assert o.result.network_w == pytest.approx(207e3)
    assert [n[1] for n in o.applied.named] == ["S.fabric.core[5]"]
    assert o.applied.tier_failures == ()
    (row,) = [r for r in mx.matrix(collect(ws, views=())) if r.name == "mix"]
    assert row.cell("network").notes == ("out of service: S.fabric.core[5]",)
    # the forecast's scenario (pipeline_scenarios.scenario_twin) names the same one part failed
    twin = scenario_twin(ws, ws.design, "mix")
    assert [n[1] for n in twin.named] == ["S.fabric.core[5]"]
    assert twin.notes == ("S.fabric.core[5] failed",)


@pytest.mark.parametrize("target, code, message", [
    ("S.pods[0].racks[0].hosts[0].nics[0].port[c]", "E214", "port c is out of range: "),
    ("S.fabric.rail[2].core", "E209", "tier `core` is not split by rail"),
    ("S.fabric.pod[1].core", "E209", "tier `core` has `scope = site`"),
    ("S.pods[0].racks[0].hosts[0]", "E218", "failing a host is not modelled"),
    # a whole fabric (or a switch instance) was let through by a substring of E218's hint text,
    # and failed nothing: `check` said the scenario holds, the forecast ran unchanged
    ("S.fabric", "E218", "failing a fabric is not modelled"),
])
def test_what_the_front_end_rejects(target, code, message):
    design = astral_dsl.loads(DESIGN + f"scenario bad {{ fail {target} }}\n", name="t.astral",
                              root=REPO)
    errors = [d for d in design.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code], [d.message for d in errors]
    assert message in errors[0].message


def test_an_unfailable_kind_is_named_with_its_article():
    # `failing a air is not modelled`: the kind's article was always `a`
    text = (REPO / "examples" / "sizing.astral").read_text(encoding="utf-8")
    design = astral_dsl.loads(text + "scenario bad { fail Cluster.rows[0].room }\n",
                              name="t.astral", root=REPO)
    assert [d.message for d in design.diagnostics if d.is_error] == [
        "failing an air is not modelled"]


def test_a_port_label_is_a_label_whatever_else_is_named_so():
    # a scenario called `b` does not stand for port b
    design, checked = _check(DESIGN + "scenario b { fail S.pods[0].racks[0].hosts[0].nics[3]"
                                      ".port[b] }\n", "b")
    assert design.valid
    (o,) = [o for o in checked.scenarios if o.name == "b"]
    assert "1 NIC runs on 1 of 2 ports (`S.pods[0].racks[0].hosts[0].nics[3].port[b]` failed)" \
        in o.notes


def test_double_minus_is_a_link_only_in_a_fail():
    design = astral_dsl.loads("param a = 2\nparam b = 1\nparam c = a--b\n", name="t.astral")
    (err,) = [d for d in design.diagnostics if d.is_error]
    assert err.code == "E303" and "names the link between two parts of a fabric" in err.message
    assert "a - -b" in err.hint
    assert astral_dsl.loads("param a = 2\nparam b = 1\nparam c = a - -b\n",
                            name="t.astral").valid
    from astral_dsl.fmt import format_text

    text = "scenario s { fail S.pods[0].racks[0].hosts[0].nics[0].port[a] -- " \
           "S.fabric.pod[0].rail[0].plane[A].tor[0] }\n"
    assert format_text(text) == text


# ---- B1: `astral check` reports fabric failures; the forecast does not crash -------------------
REPRO = """\
import stdlib.hardware { H100_SXM, CX7_2x200G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack R { hosts = 4 x Node }
pod P { racks = 16 x R }
fabric F {
  rails = 8, planes = 2
  tier tor { switch = Switch51T(power = 1 kW), scope = pod, per = [rail, plane], down = 128 x 200 Gb/s, up = 64 x 400 Gb/s }
  tier core { switch = Switch51T(power = 1 kW), scope = site, down = 128 x 400 Gb/s }
}
site S { pods = 2 x P, fabric = F }
job dp {
  model = Llama3_8B, placement = S, gpus = 1024, recompute = full
  parallel { tp = 1, pp = 1, dp = 1024, zero = 2 }
  batch { global_batch = 1024, micro = 1, seq = 8192 }
}
scenario rail2 { fail S.fabric.rail[2] }
scenario rail2_tors { fail S.fabric.rail[2].tor }
scenario tors { fail S.fabric.tor }
scenario both_planes { fail S.fabric.plane[A]
  fail S.fabric.plane[B] }
"""


@pytest.mark.parametrize("scenario, gpus", [
    # 2 pods x 16 racks x 4 hosts = 128 hosts: rail 2 is NIC 2, GPU 2, of each
    ("rail2", 128), ("rail2_tors", 128),
    # every ToR, or both planes: all 1,024 GPUs
    ("tors", 1024), ("both_planes", 1024),
])
def test_fabric_failures_are_reported_by_check(tmp_path, scenario, gpus):
    path = tmp_path / "repro.astral"
    path.write_text(REPRO)
    proc = _cli("check", str(path), "--scenario", scenario, "--color", "never")
    out = proc.stdout.decode()
    assert f"scenario {scenario}: breaks 1 constraint(s)" in out
    assert f"breaks: [E616] {gpus:,} GPUs lose every NIC port: cut off from the network" in out
    doc = json.loads(_cli("check", str(path), "--scenario", scenario, "--format",
                          "json").stdout)
    (w680,) = [d for d in doc["diagnostics"] if d["code"] == "W680"]
    assert any("E616" in n for n in w680["notes"])
    proc = _cli("forecast", str(path), "--scenario", scenario)
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "E000" not in out and "Traceback" not in out
    assert "error[E775]: job `dp`: under the scenario its ranks lose their network" in out


def test_a_required_scenario_that_cuts_gpus_off_is_e680():
    text = REPRO.replace("scenario rail2 { fail", "scenario rail2 { required = true\n  fail")
    _, checked = _check(text)
    (e680,) = [d for d in checked.diagnostics if d.code == "E680"]
    assert "required scenario `rail2` breaks 1 constraint(s)" in e680.message
    assert "breaks: [E616] 128 GPUs lose every NIC port" in e680.notes[0]


# ---- B5: the forecast sees power failures -----------------------------------------------------
def test_the_forecast_says_when_the_jobs_hosts_lose_power():
    text = (REPO / "examples" / "astral.astral").read_text() + """
scenario both_feeds { fail Astral.pods[0].rows[0].hvdc
  fail Astral.pods[0].rows[0].utility }
scenario far_row { fail Astral.pods[0].rows[100].hvdc
  fail Astral.pods[0].rows[100].utility }
"""
    ws = astral_dsl.compiles(text, name="astral.astral", root=REPO / "examples")
    design = ws.design
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(ws, scenario="both_feeds")
    (d,) = [d for d in exc.value.diagnostics if d.is_error]
    # row 0 of pod 0: 16 racks x 4 hosts, all among the job's first 2,048 hosts
    assert d.code == "E776"
    assert d.message.startswith("job `llama405b`: under the scenario 64 of its hosts lose power "
                                "(`Astral.pods[0].rows[0].hvdc`, "
                                "`Astral.pods[0].rows[0].utility` down")
    # row 100 is past the job's 2,048 hosts (rows 0 to 31): the forecast runs, unchanged
    base = seer.forecast(design)
    far = astral_dsl.forecast(ws, scenario="far_row").detail
    assert far.iteration_time == base.iteration_time


# ---- B8: a group target is counted and named as written ----------------------------------------
def test_group_targets_say_how_many_replicas():
    text = (REPO / "examples" / "astral.astral").read_text() + """
scenario all_row0 { fail Astral.pods[*].rows[0].hvdc }
scenario three { fail Astral.pods[0..<3].rows[0].hvdc }
scenario hosts { set Node.power = 11 kW }
"""
    ws = astral_dsl.compiles(text, name="astral.astral", root=REPO / "examples")
    design = ws.design
    checked = astral_dsl.check(ws, ["all_row0", "three", "hosts"])
    by = {o.name: o for o in checked.scenarios}
    assert by["all_row0"].notes[0] == "feeder Astral.pods[*].rows[0].hvdc failed (8 feeders)"
    assert by["three"].notes[0] == "feeder Astral.pods[0..2].rows[0].hvdc failed (3 feeders)"
    # 8 pods x 128 rows x 16 racks x 4 hosts
    assert by["hosts"].notes[0] == "Node.power = 11 kW (65,536 hosts)"
    from astral_dsl.outputs.jsonout import scenario_json

    assert scenario_json("all_row0", by["all_row0"].applied)["failed"] == [
        {"target": "Astral.pods[*].rows[0].hvdc", "kind": "feeder", "replicas": 8}]
    assert scenario_json("hosts", by["hosts"].applied)["changed"] == [
        {"target": "Node", "field": "power", "value": "11 kW", "kind": "host",
         "replicas": 65_536}]


def test_the_groups_a_selection_names_are_the_tiers_scope_kinds_of_model_tier_groups():
    """Which kinds of instance a tier's `scope` names is model/tier_groups.py's (kinds_of,
    scope_kinds): the selections of the language (semantics/access.py) read it there, as the
    analyses and the views do; it was a twin table in access.py, and `SCOPE_KINDS.get(scope,
    (scope,))` at twelve places."""
    import re

    package = REPO / "astral_dsl"
    spelt = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                   if re.search(r'"row": \("row", "block"\)|SCOPE_KINDS\.get\(', p.read_text()))
    assert spelt == ["model/tier_groups.py"]
    # a `block` tier's groups are named by block or by row; the site's one group by none
    for target in ("S.fabric.block[1].rail[0].leaf", "S.fabric.row[1].rail[0].leaf"):
        assert _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]", f"fail {target}")) == []
    (error,) = _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]",
                                      "fail S.fabric.pod[0].rail[0].leaf"))
    assert (error.code, error.message) == ("E209", "fabric `F` has no member `pod`")
    (error,) = _errors(BLOCKS.replace("fail S.fabric.rail[3].leaf[0]",
                                      "fail S.fabric.site[0].spine"))
    assert (error.code, error.message) == ("E209", "fabric `F` has no member `site`")
