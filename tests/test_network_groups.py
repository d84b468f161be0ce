"""Tier groups that differ in size, NICs of several speeds, path lengths through deep fabrics,
cages under an undeclared uplink medium, and the hint of a switch's capacity overflow.

Every expected number is computed by hand in a comment from the wiring rules of
astral_dsl/analyses/network.py (NIC k on rail k mod R; a tier's groups hold whole groups of
the tier below; switches per group = ceil(links of the group / downlinks), then even uplinks)."""
from __future__ import annotations

import pytest

import astral_dsl



def _parts(switch: str = "ports = 64", nics: int = 8, hosts: str = "4 x H",
           head: str = "") -> str:
    """GPUs of 700 W, single-port 400G NICs (one per GPU), a 400G switch, a rack of hosts."""
    return f"""{head}
gpu G {{ power = 700 W }}
nic N {{ ports = 1, port_speed = 400 Gb/s }}
switch Sw {{ {switch}, port_speed = 400 Gb/s, power = 750 W }}
host H {{ gpus = {nics} x G, nics = {nics} x N, power = 10 kW }}
rack R {{ hosts = {hosts} }}
"""


PARTS = _parts()


def _check(text: str):
    ws = astral_dsl.compiles(text, name="groups.astral")
    assert ws.design.valid, [(d.code, d.message) for d in ws.design.diagnostics]
    return astral_dsl.check(ws)


def _tiers(checked):
    (fabric,) = checked.engineering.fabrics
    return {t.name: t for t in fabric.tiers}


def _codes(checked, prefix="E6"):
    return [d.code for d in checked.diagnostics if d.code.startswith(prefix)]


def test_pods_of_different_sizes_get_each_the_switches_of_its_own_hosts():
    # Big: 12 racks x 4 hosts = 48 hosts, one rail-r port each: 48 ports per (pod, rail) group;
    # Small: 4 x 4 = 16. A 32-port leaf: Big needs ceil(48 / 32) = 2 per rail, Small 1 (the
    # average (48 + 16) / 2 = 32 would leave Big's 48 hosts on 32 ports, the largest's 2 for
    # every group 32 leaves): each pod's groups their own, 2 x 8 + 1 x 8 = 24 leaves.
    # Spines: 24 leaves x 32 uplinks = 768 links / 64 = 12; each takes a link from all 24
    # leaves (24 <= 64: a mesh), so the count divides 32: 16 (2 links from each leaf).
    checked = _check(PARTS + """
pod Big { racks = 12 x R }
pod Small { racks = 4 x R }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { pods = [1 x Big, 1 x Small], fabric = F }
""")
    tiers = _tiers(checked)
    leaf, spine = tiers["leaf"], tiers["spine"]
    assert (leaf.groups, leaf.per_group, leaf.switches) == (16, 2, 24)
    assert [(r[1], r[0], r[2]) for r in leaf.sizes] == [("S.pods[0]", 1, 2), ("S.pods[1]", 1, 1)]
    assert leaf.per_group_text == "1 to 2"
    assert leaf.down_links == 512                       # 64 hosts x 8 NICs, exactly
    assert leaf.down_used == 512 / 24                   # 512 links / 24 leaves
    assert leaf.up_links == 24 * 32
    assert leaf.sized_for is None                       # each group is its own size
    assert (spine.per_group, spine.needed, spine.switches, spine.sizes) == (16, 12, 16, ())
    assert spine.sized_for is None
    assert _codes(checked) == []


def test_uniform_pods_are_counted_as_before():
    # Two pods of 8 racks: 32 hosts per (pod, rail) group, 1 leaf of 32 down each: 16 leaves;
    # 16 x 32 / 64 = 8 spines. Nothing sized above the average.
    checked = _check(PARTS + """
pod P { racks = 8 x R }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { pods = 2 x P, fabric = F }
""")
    tiers = _tiers(checked)
    assert (tiers["leaf"].switches, tiers["spine"].switches) == (16, 8)
    assert tiers["leaf"].sized_for is None


def test_upper_tier_groups_of_different_sizes():
    # Rows of 4 racks (16 hosts): one leaf per (row, rail), 16 down, 16 up. Pod A holds 6 rows,
    # pod B 2: agg groups (pod, rail) serve 6 x 16 = 96 or 2 x 16 = 32 uplinks (the average 64
    # would need 1 agg of 64 downlinks, A's 96 need 2): A's groups ceil(96 / 64) = 2 (a mesh over
    # 6 leaves, 2 | 16), B's 1: 8 rails x (2 + 1) = 24 aggs, not 2 x 16 = 32.
    checked = _check(PARTS.replace("rack R { hosts = 4 x H }", "rack R { hosts = 4 x H }\n"
                                   "row W { racks = 4 x R }") + """
pod A { rows = 6 x W }
pod B { rows = 2 x W }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = row, per = [rail], down = 16 x 400 Gb/s, up = 16 x 400 Gb/s }
  tier agg { switch = Sw, scope = pod, per = [rail], down = 64 x 400 Gb/s }
}
site S { pods = [1 x A, 1 x B], fabric = F }
""")
    agg = _tiers(checked)["agg"]
    assert (agg.groups, agg.per_group, agg.switches) == (16, 2, 24)
    assert [(r[1], r[2]) for r in agg.sizes] == [("S.pods[0]", 2), ("S.pods[1]", 1)]
    assert agg.down_links == 8 * 8 * 16                 # 8 rows x 8 rails leaves x 16 up
    assert agg.sized_for is None


def test_nics_that_split_unevenly_over_the_rails_size_each_rail_for_itself():
    # 6 NICs on 4 rails: NICs 0 and 4 on rail 0, 1 and 5 on rail 1, 2 on rail 2, 3 on rail 3.
    # 32 hosts: rails 0 and 1 carry 2 x 32 = 64 ports, more than a 50-port leaf: 2 leaves each
    # (the average, 6 x 32 / 4 = 48, would fit one); rails 2 and 3 carry 32: 1 leaf each (each
    # got rail 0's 2: 8 leaves). 2 + 2 + 1 + 1 = 6. The spine: 6 x 50 uplinks = 300 / 64 =
    # 4.7 -> 5, each taking a link from all 6 leaves (6 <= 64: a mesh), 5 divides 50: 5.
    checked = _check(_parts("ports = 128", nics=6, hosts="32 x H") + """
fabric F {
  rails = 4
  tier leaf { switch = Sw, scope = rack, per = [rail], down = 50 x 400 Gb/s, up = 50 x 400 Gb/s }
  tier spine { switch = Sw, scope = rack, down = 64 x 400 Gb/s }
}
site S { racks = 1 x R, fabric = F }
""")
    leaf, spine = _tiers(checked).values()
    assert (leaf.per_group, leaf.switches, leaf.per_group_text, leaf.sized_for) == \
        (2, 6, "1 to 2", None)
    assert [(k, n) for k, n, _, _ in leaf.by_group[0][2]] == [
        ((0, None), 2), ((1, None), 2), ((2, None), 1), ((3, None), 1)]
    assert [leaf.size(0, r) for r in range(4)] == [2, 2, 1, 1]
    assert (spine.per_group, spine.switches, spine.down_links) == (5, 5, 300)
    (w,) = [d for d in checked.diagnostics if d.code == "W610"]
    assert "each rail's switches are counted for its own ports (rail 0's the most)" in w.message


def test_every_nic_speed_is_checked_against_the_first_tier():
    # A: 400G NICs, B: 200G NICs, under a 400G leaf: B's links do not match, whichever is
    # listed first.
    base = PARTS.replace("rack R { hosts = 4 x H }", "") + """
nic N2 { ports = 1, port_speed = 200 Gb/s }
host B { gpus = 8 x G, nics = 8 x N2, power = 10 kW }
rack R { hosts = ORDER }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, down = 64 x 400 Gb/s }
}
site S { racks = 8 x R, fabric = F }
"""
    for order in ("[2 x H, 2 x B]", "[2 x B, 2 x H]"):
        checked = _check(base.replace("ORDER", order))
        e601 = [d for d in checked.diagnostics if d.code == "E601"]
        assert len(e601) == 1, (order, [(d.code, d.message) for d in checked.diagnostics])
        assert "NIC `N2`" in e601[0].message and "200 Gb/s" in e601[0].message
        assert e601[0].span is not None and e601[0].hint


def test_paths_climb_to_the_tier_that_holds_both_ends():
    # leaf (rack, rail) > spine (row, rail) > agg (pod, rail) > core (site). Two hosts of one
    # pod on one rail but in different rows meet at the agg: leaf > spine > agg > spine > leaf,
    # 5 switches; rails meet only at the core: 7; pods too: 7.
    checked = _check(_parts("ports = 128", hosts="16 x H") + """
row W { racks = 4 x R }
pod P { rows = 4 x W }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = rack, per = [rail], down = 16 x 400 Gb/s, up = 16 x 400 Gb/s }
  tier spine { switch = Sw, scope = row, per = [rail], down = 64 x 400 Gb/s, up = 64 x 400 Gb/s }
  tier agg { switch = Sw, scope = pod, per = [rail], down = 64 x 400 Gb/s, up = 64 x 400 Gb/s }
  tier core { switch = Sw, scope = site, down = 128 x 400 Gb/s }
}
site S { pods = 2 x P, fabric = F }
""")
    (fabric,) = checked.engineering.fabrics
    assert dict(fabric.hops) == {"same ToR": 1, "same rail, same pod": 5, "cross-rail": 7,
                                 "cross-pod": 7}
    assert dict(fabric.routes)["same rail, same pod"] == "leaf > spine > agg > spine > leaf"


def test_cages_are_checked_when_the_uplinks_have_no_medium():
    # 40 single-port modules for the downlinks alone on a 32-cage switch: E610 whatever the
    # uplinks (whose medium the tier above does not declare) add.
    checked = _check(_parts("ports = 64, cages = 32",
                            head="import stdlib.network { SR4_400G }") + """
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 40 x 400 Gb/s, up = 24 x 400 Gb/s
              medium = SR4_400G(power = 10 W), length = 20 m }
  tier spine { switch = Sw, down = 64 x 400 Gb/s, optics_power = 100 W }
}
site S { racks = 8 x R, fabric = F }
""")
    (e610,) = [d for d in checked.diagnostics if d.code == "E610"]
    assert "at least 40 modules" in e610.message and "32 cages" in e610.message
    assert e610.span.start.line == 11


def test_capacity_overflow_has_a_hint():
    # 48 + 32 = 80 ports of 400G = 32 Tb/s on a 64 x 400G = 25.6 Tb/s switch
    checked = _check(PARTS + """
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = rack, per = [rail], down = 48 x 400 Gb/s, up = 32 x 400 Gb/s }
}
site S { racks = 2 x R, fabric = F }
""")
    e600 = [d for d in checked.diagnostics if d.code == "E600" and "Tb/s" in d.message]
    assert e600 and all(d.hint for d in e600)
    assert "32 Tb/s" in e600[0].message and "25.6 Tb/s" in e600[0].message


def test_nics_of_one_and_two_ports_reach_both_planes_whichever_host_comes_first():
    # A: 8 dual-port 200G NICs, B: 8 single-port ones; 32 racks of 2 A + 2 B = 64 of each.
    # Plane A of each rail takes port a of every NIC: 64 + 64 = 128 ports, one 128-port ToR;
    # plane B takes A's port b: 64, one ToR. 8 rails x 2 planes = 16 ToRs; 16 x 64 uplinks =
    # 1,024 / 128 = 8 cores. The last NIC listed used to decide the ports per NIC: B last ->
    # "no port lands on plane B" (W610) and all 1,536 ports counted on plane A.
    base = """
gpu G { power = 700 W }
nic N2 { ports = 2, port_speed = 200 Gb/s }
nic N1 { ports = 1, port_speed = 200 Gb/s }
switch Sw { ports = 128, port_speed = 400 Gb/s, max_ports = 256, power = 750 W }
host A { gpus = 8 x G, nics = 8 x N2, power = 10 kW }
host B { gpus = 8 x G, nics = 8 x N1, power = 10 kW }
rack R { hosts = ORDER }
fabric F {
  rails = 8, planes = 2DUAL
  tier tor { switch = Sw, scope = site, per = [rail, plane], down = 128 x 200 Gb/s,
             up = 64 x 400 Gb/s }
  tier core { switch = Sw, down = 128 x 400 Gb/s }
}
site S { racks = 32 x R, fabric = F }
"""
    for order in ("[2 x A, 2 x B]", "[2 x B, 2 x A]"):
        checked = _check(base.replace("ORDER", order).replace("DUAL", ""))
        tiers = _tiers(checked)
        assert (tiers["tor"].groups, tiers["tor"].per_group) == (16, 1), order
        assert tiers["core"].switches == 8
        assert not [d for d in checked.diagnostics if d.code == "W610"]
        # dual-homing with single-port NICs in the fabric: E605 names the NIC
        checked = _check(base.replace("ORDER", order).replace("DUAL", ", dual_homing = true"))
        (e605,) = [d for d in checked.diagnostics if d.code == "E605"]
        assert "NIC `N1` has one port" in e605.message


def test_a_fabric_that_counts_no_switch_says_so():
    # no tier: the 4 hosts' 32 NIC ports reach no switch; tiers over hosts without NICs: the
    # first tier serves 0 ports and counts 0 switches. Both were silent zeros.
    checked = _check(_parts(hosts="4 x H") + "fabric F { rails = 8 }\n"
                     "site S { racks = 1 x R, fabric = F }\n")
    (w,) = [d for d in checked.diagnostics if d.code == "W611"]
    assert "declares no tier: the 32 NIC ports" in w.message and w.span.start.line == 7
    assert w.hint.startswith("declare its tiers")
    text = _parts().replace(", nics = 8 x N", "") + """
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s }
}
site S { racks = 2 x R, fabric = F }
"""
    checked = _check(text)
    assert _tiers(checked)["leaf"].switches == 0
    (w,) = [d for d in checked.diagnostics if d.code == "W611"]
    assert "serves no NIC port: the 8 hosts" in w.message and w.hint.startswith("give the hosts")
    # a fabric that counts switches has no W611
    assert not [d for d in _check(PARTS + """
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = rack, per = [rail], down = 32 x 400 Gb/s }
}
site S { racks = 1 x R, fabric = F }
""").diagnostics if d.code == "W611"]


def _rails(rails: int, leaf_down: int, spine: str, site: str) -> str:
    """A leaf tier per rack and rail (as many uplinks as downlinks) under a spine tier."""
    return f"""
fabric F {{
  rails = {rails}
  tier leaf {{ switch = Sw, scope = rack, per = [rail], down = {leaf_down} x 400 Gb/s,
              up = {leaf_down} x 400 Gb/s }}
  tier spine {{ switch = Sw, {spine} }}
}}
site S {{ {site}, fabric = F }}
"""


# ---- one wiring for every output when the NICs split unevenly over the rails -------------------
# 6 single-port NICs on 4 rails (W610): NICs 0 and 4 on rail 0, 1 and 5 on rail 1, 2 on rail 2,
# 3 on rail 3; 32 hosts in one rack, 50-port leaves. Rail 0's group takes host i's NIC 0 at
# down port 2i and NIC 4 at 2i + 1 (fabric_names.place): hosts 0..24 fill leaf 0's 50 ports
# (2 x 25), hosts 25..31 take leaf 1's ports 0..13; rails 2 and 3 take one port a host, 32 on
# leaf 0 (each rail its own leaves: rails 2 and 3 have one, test_network_rails.py).
def _job(site: str, gpus: int, parallel: str) -> str:
    """A Llama 3 8B job over every GPU of `site`, one sample of 4,096 tokens per GPU."""
    return f"""job j {{
  model = Llama3_8B, placement = {site}, gpus = {gpus}
  parallel {{ {parallel} }}
  batch {{ global_batch = {gpus}, micro = 1, seq = 4096 }}
}}
"""


def _valid(text: str, name: str):
    ws = astral_dsl.compiles(text, name=name)
    assert ws.design.valid, [(d.code, d.message) for d in ws.design.diagnostics]
    return ws


UNEVEN = _parts("ports = 128", nics=6, hosts="32 x H", head="import stdlib.models { Llama3_8B }") \
    + _rails(4, 50, "scope = rack, down = 64 x 400 Gb/s", "racks = 1 x R") + """
scenario leaf1 { fail S.fabric.rack[0].rail[0].leaf[1] }
scenario leaf0_rail2 { fail S.fabric.rack[0].rail[2].leaf[0] }
""" + _job("S", 192, "tp = 2, dp = 96")


@pytest.fixture(scope="module")
def uneven():
    return _valid(UNEVEN, "uneven.astral")


def test_uneven_rails_cables_follow_the_sizing(uneven):
    from astral_dsl.analyses import cabling

    hosts = list(cabling.host_links(uneven.design, {}))
    per_switch, taken = {}, set()
    for h in hosts:
        for _, _, switch, port in h.links:
            per_switch[switch] = per_switch.get(switch, 0) + 1
            assert (switch, port) not in taken          # no down port cabled twice
            assert 0 <= port < 50
            taken.add((switch, port))
    leaf = "S.fabric.rack[0].rail[{}].leaf[{}]".format
    assert per_switch == {leaf(0, 0): 50, leaf(0, 1): 14, leaf(1, 0): 50, leaf(1, 1): 14,
                          leaf(2, 0): 32, leaf(3, 0): 32}
    # host 25: NIC 0 at rail 0's port 50 = leaf 1 port 0, NIC 4 at 51 = leaf 1 port 1; NIC 2
    # at rail 2's port 25 = leaf 0 port 25
    assert hosts[25].links == ((0, 0, leaf(0, 1), 0), (1, 0, leaf(1, 1), 0),
                               (2, 0, leaf(2, 0), 25), (3, 0, leaf(3, 0), 25),
                               (4, 0, leaf(0, 1), 1), (5, 0, leaf(1, 1), 1))


def test_uneven_rails_failures_darken_the_hosts_wired_there(uneven):
    # rail 0's leaf 1 holds NICs 0 and 4 of hosts 25..31: 7 hosts x 2 GPUs (GPU i uses NIC
    # i mod 6) = 14 GPUs cut off. Rail 2's leaf 0 holds NIC 2 of all 32 hosts: 32 GPUs.
    for scenario, gpus in (("leaf1", 14), ("leaf0_rail2", 32)):
        checked = astral_dsl.check(uneven, [scenario])
        said = [t for d in checked.diagnostics for t in (d.message, *d.notes)
                if t.startswith("breaks: [E616]") or d.code == "E616"]
        assert len(said) == 1 and f"{gpus} GPUs lose every NIC port" in said[0], said
        # the E616's own notes follow it in the W680: which NICs of which hosts
        hosts = [t for d in checked.diagnostics for t in d.notes if t.startswith("[E616] ")]
        assert hosts == (["[E616] NIC 0 of 7 hosts from `S.racks[0].hosts[25]`",
                          "[E616] NIC 4 of 7 hosts from `S.racks[0].hosts[25]`"]
                         if scenario == "leaf1" else
                         ["[E616] NIC 2 of 32 hosts from `S.racks[0].hosts[0]`"]), hosts


def test_uneven_rails_rank_map_and_rack_view(uneven):
    import re

    from astral_dsl.diagnose import rank_map
    from astral_dsl.outputs.render import render

    # ranks fill the hosts' 6 GPUs in order: host 25 holds ranks 150..155, GPU i on NIC i
    rm = rank_map(uneven.design)
    switches = [(rm.ranks[r].host, [p.switch for p in rm.ranks[r].ports]) for r in (150, 152, 154)]
    leaf = "S.fabric.rack[0].rail[{}].leaf[{}]".format
    assert switches == [("S.racks[0].hosts[25]", [leaf(0, 1)]),
                        ("S.racks[0].hosts[25]", [leaf(2, 0)]),
                        ("S.racks[0].hosts[25]", [leaf(0, 1)])]
    checked = astral_dsl.check(uneven)
    g = render(checked.design, "rack", "S.racks[0].hosts[25]", checked=checked)
    edges = dict(re.findall(r'tooltip="host 0 NIC (\d) port a -> leaf rail \d #(\d+)"', g.source))
    assert edges == {"0": "1", "1": "1", "2": "0", "3": "0", "4": "1", "5": "1"}
    assert "2 per rail in" in g.source          # the leaf is split by rail only, not plane


def test_a_hosts_ports_of_one_rail_may_straddle_two_leaves():
    # 2 single-port NICs on 1 rail: 2 ports a host on the rail's group, 49-port leaves (an odd
    # count). 30 hosts = 60 ports: ceil(60 / 49) = 2 leaves. Host 24's ports are the group's
    # down ports 48 and 49: leaf 0 port 48 and leaf 1 port 0 (not leaf 0's port 49 mod 49 = 0,
    # host 0's); leaf 0 holds 49 ports, leaf 1 the other 11.
    from astral_dsl.analyses import cabling

    ws = astral_dsl.compiles(_parts("ports = 128", nics=2, hosts="30 x H") + """
fabric F {
  rails = 1
  tier leaf { switch = Sw, scope = rack, down = 49 x 400 Gb/s, up = 49 x 400 Gb/s }
  tier spine { switch = Sw, scope = rack, down = 98 x 400 Gb/s }
}
site S { racks = 1 x R, fabric = F }
""", name="straddle.astral")
    hosts = list(cabling.host_links(ws.design, {}))
    leaf = "S.fabric.rack[0].leaf[{}]".format
    assert hosts[24].links == ((0, 0, leaf(0), 48), (1, 0, leaf(1), 0))
    ends = [(s, p) for h in hosts for _, _, s, p in h.links]
    assert len(set(ends)) == 60
    assert sum(s == leaf(0) for s, _ in ends) == 49


def test_hosts_of_different_nics_in_one_group_take_their_own_ports():
    # 8 hosts A (8 NICs on 4 rails: 2 ports a rail) then 8 hosts B (4 NICs: 1 a rail) in one
    # rack, 20-port leaves. Rail 0's group: A hosts take ports 0..15 (2 each), B host 8 + m
    # takes port 16 + m: host 11 port 19 of leaf 0, host 12 port 20 = leaf 1 port 0, host 15
    # leaf 1 port 3. 24 ports on rail 0: ceil(24 / 20) = 2 leaves. (Counted as position x 1,
    # B host 12 would land on leaf 0's port 12, A host 6's.)
    from astral_dsl.analyses import cabling
    from astral_dsl.outputs.render import render

    text = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch Sw { ports = 128, port_speed = 400 Gb/s, power = 750 W }
host A { gpus = 8 x G, nics = 8 x N, power = 10 kW }
host B { gpus = 4 x G, nics = 4 x N, power = 5 kW }
rack R { hosts = [8 x A, 8 x B] }
fabric F {
  rails = 4
  tier leaf { switch = Sw, scope = rack, per = [rail], down = 20 x 400 Gb/s, up = 20 x 400 Gb/s }
  tier spine { switch = Sw, scope = rack, down = 40 x 400 Gb/s }
}
site S { racks = 1 x R, fabric = F }
"""
    ws = astral_dsl.compiles(text, name="mixed.astral")
    hosts = list(cabling.host_links(ws.design, {}))
    leaf = "S.fabric.rack[0].rail[0].leaf[{}]".format
    rail0 = [[(s, p) for k, _, s, p in h.links if k % 4 == 0] for h in hosts]
    assert hosts[12].host == "S.racks[0].hosts[12]"
    assert (rail0[11], rail0[12], rail0[15]) == ([(leaf(0), 19)], [(leaf(1), 0)], [(leaf(1), 3)])
    ends = [(s, p) for h in hosts for _, _, s, p in h.links]
    assert len(ends) == len(set(ends)) == 8 * 8 + 8 * 4
    checked = astral_dsl.check(ws)
    g = render(checked.design, "rack", "S.racks[0].hosts[12]", checked=checked)
    assert 'tooltip="host 0 NIC 0 port a -> leaf rail 0 #1"' in g.source


def test_seer_counts_the_hosts_under_a_leaf_of_the_busiest_rail(uneven):
    # Rail 0's leaf takes 2 ports a host: 50 // 2 = 25 hosts under one leaf (the average, 6 / 4
    # = 1.5 ports, would put 33 there and keep a 32-host group under one switch).
    from astral_dsl.seer.cluster import cluster_of

    job = uneven.design.jobs[0]
    cluster = cluster_of(uneven.design, job)
    assert [(t.name, t.reach_hosts) for t in cluster.net.tiers] == [("leaf", 25), ("spine", 32)]


def test_failures_of_a_group_of_hosts_with_different_nics():
    # Each rack: 8 hosts A (8 NICs on 4 rails: NICs 0 and 4 on rail 0) then 8 hosts B (4 NICs:
    # NIC 0 on rail 0), 20-port leaves. Rail 0's group: A hosts take ports 0..15, B host 8 + m
    # port 16 + m. Rack 1's rail-0 leaf 1 (ports 20..23): B hosts 12..15's NIC 0 = 4 GPUs
    # (GPU i on NIC i). Its leaf 0: A hosts' NICs 0 and 4 (8 x 2 GPUs) and B hosts 8..11's
    # NIC 0 (4): 20 GPUs. B host 12's port a is wired to leaf 1 (1 GPU), not to leaf 0 (E219).
    text = _parts("ports = 128", nics=8, hosts="[8 x H, 8 x B]").replace(
        "rack R", "host B { gpus = 4 x G, nics = 4 x N, power = 5 kW }\nrack R") \
        + _rails(4, 20, "scope = site, down = 80 x 400 Gb/s", "racks = 2 x R") + """
scenario leaf1 { fail S.fabric.rack[1].rail[0].leaf[1] }
scenario leaf0 { fail S.fabric.rack[1].rail[0].leaf[0] }
scenario wired { fail S.racks[1].hosts[12].nics[0].port[a] -- S.fabric.rack[1].rail[0].leaf[1] }
scenario not_wired {
  fail S.racks[1].hosts[12].nics[0].port[a] -- S.fabric.rack[1].rail[0].leaf[0]
}
"""
    ws = astral_dsl.compiles(text, name="mixed_failures.astral")
    assert ws.design.valid, [(d.code, d.message) for d in ws.design.diagnostics]
    checked = astral_dsl.check(ws, ["leaf1", "leaf0", "wired", "not_wired"])
    said = {o.name: [t for d in o.result.diagnostics for t in (d.message, *d.notes)]
            for o in checked.scenarios}
    for name, gpus in (("leaf1", "4 GPUs"), ("leaf0", "20 GPUs"), ("wired", "1 GPU loses")):
        assert any(t.startswith(gpus) and "cut off" in t for t in said[name]), said[name]
    assert any("is not wired to" in t for t in said["not_wired"]), said["not_wired"]


def test_w628_names_one_fabric_on_pods_of_two_sizes_as_one():
    # F attached to each pod: Big (10 racks x 4 hosts = 40 hosts: 40 ports per rail / 32 = 2
    # leaves per rail = 16, 16 x 32 uplinks / 64 = 8 spines: 24 switches) and 3 Small (8 hosts:
    # 1 leaf per rail = 8, 8 x 32 / 64 = 4 spines: 12 each, 36). 60 switches of 750 W = 45 kW,
    # on no feeder. It is one fabric on two parts, not "1 other fabric".
    text = _parts() + """
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = pod, down = 64 x 400 Gb/s }
}
pod Big { racks = 10 x R, fabric = F }
pod Small { racks = 2 x R, fabric = F }
site Site { pods = [1 x Big, 3 x Small] }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="pods.astral"))
    by_owner = {f.owner: f.switches for f in checked.engineering.fabrics}
    assert by_owner == {"Site.pods[0]": 24, "Site.pods[1]": 36}
    (w,) = [d for d in checked.diagnostics if d.code == "W628"]
    assert w.message.startswith("the network's 45 kW (60 switches of `Site.pods[0].fabric` on "
                                "`Site.pods[0]` and `Site.pods[1]`) are on no declared feeder")


def test_a_first_tier_split_by_rail_and_plane_sizes_each_group_for_itself():
    # 6 dual-port NICs on 4 rails x 2 planes, 24 hosts (6 racks): rail 0 holds NICs 0 and 4, one
    # port of each per plane: 2 ports per host, 48 per (rail 0, plane) group -> 2 leaves of 32
    # down; rails 2 and 3 hold one NIC: 24 ports -> 1 leaf. Each group for its own ports:
    # 2 x 2 x 2 + 2 x 2 x 1 = 12 (every group got 2: 16). The spine: 12 x 16 uplinks = 192 /
    # 64 = 3, each taking a link from all 12 leaves (a mesh): the divisor of 16 from 3 is 4.
    checked = _check(_parts(nics=6).replace("nic N { ports = 1,", "nic N { ports = 2,") + """
fabric F {
  rails = 4, planes = 2
  tier leaf { switch = Sw, scope = site, per = [rail, plane], down = 32 x 400 Gb/s,
              up = 16 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = 6 x R, fabric = F }
""")
    leaf, spine = _tiers(checked).values()
    assert (leaf.groups, leaf.per_group, leaf.switches, leaf.sized_for) == (8, 2, 12, None)
    assert leaf.size(None, 2, 1) == 1 and leaf.size(None, 0, 1) == 2
    assert (spine.per_group, spine.switches) == (4, 4)
    (fc,) = checked.engineering.fabrics
    from astral_dsl.outputs.size_report import bom_lines
    assert ("leaf: its groups differ by rail or plane, each sized for its own links: 2 switches "
            "on rail 0 plane A, rail 0 plane B, rail 1 plane A, rail 1 plane B; 1 on rail 2 "
            "plane A, rail 2 plane B, rail 3 plane A, rail 3 plane B") in bom_lines(fc)


def test_own_switches_sums_each_groups_own_count():
    from astral_dsl.analyses.fabric_names import own_switches
    # 6 single-port NICs on 4 rails: rails 0 and 1 take 2 ports per host, rails 2 and 3 one.
    # 16 hosts, 32 down: 32, 32, 16, 16 ports -> 1 + 1 + 1 + 1 = 4; 17 hosts: 34, 34, 17, 17
    # -> 2 + 2 + 1 + 1 = 6; not split by rail: 6 x 17 = 102 ports -> 4.
    assert own_switches([(16, (1,) * 6)], 4, 1, True, False, 32) == 4
    assert own_switches([(17, (1,) * 6)], 4, 1, True, False, 32) == 6
    assert own_switches([(17, (1,) * 6)], 4, 1, False, False, 32) == 4
    # two host models in one group: 10 hosts of 8 NICs and 4 of 4 NICs on 8 rails: rails 0-3
    # take 14 ports, rails 4-7 take 10; 8 down -> 4 x 2 + 4 x 2 = 16
    assert own_switches([(10, (1,) * 8), (4, (1,) * 4)], 8, 1, True, False, 8) == 16


# ---- a site fabric over pods of different sizes: each pod's groups its own size ---------------
# Big: 10 racks x 4 hosts = 40 hosts, Small: 2 x 4 = 8 (x3); 8 single-port NICs per host, 8
# rails; leaf 32 down / 32 up per (pod, rail), spine 32 down / 32 up per pod, core 64 down per
# site; every switch 1 kW, no optics power.
#   leaf: Big 40 ports per rail -> ceil(40 / 32) = 2 per rail = 16; Small 8 -> 1 per rail = 8,
#         x 3 = 24: 40 leaves (the largest's 2 for every group: 64)
#   spine: Big 16 leaves x 32 = 512 uplinks / 32 = 16 (mesh: 16 <= 32, 16 | 32); Small 8 x 32 =
#         256 / 32 = 8, x 3 = 24: 40 spines (16 for every pod: 64)
#   core: 40 spines x 32 = 1,280 / 64 = 20; a core takes a link from each of the 40 spines (40
#         <= 64: mesh), so the count divides 32: 32 cores
#   112 switches = 112 kW, not 160.
def _three_tiers(spine: str) -> str:
    """Leaves per (pod, rail) and spines per `spine`, 32 down / 32 up; cores per site, 64 down."""
    return f"""fabric F {{
  rails = 8
  tier leaf {{ switch = S, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }}
  tier spine {{ switch = S, scope = {spine}, down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }}
  tier core {{ switch = S, scope = site, down = 64 x 400 Gb/s }}
}}
"""


PODS = """import stdlib.models { Llama3_8B }
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch S { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x H }
pod Big { racks = 10 x R }
pod Small { racks = 2 x R }
""" + _three_tiers("pod") + """site Site { pods = [1 x Big, 3 x Small], fabric = F }
scenario big_leaf { fail Site.fabric.pod[0].rail[0].leaf[1] }
scenario small_leaf { fail Site.fabric.pod[1].rail[0].leaf[1] }
scenario small_spines { fail Site.fabric.pod[3].spine }
""" + _job("Site", 512, "tp = 8, dp = 64")


@pytest.fixture(scope="module")
def pods():
    return _valid(PODS, "pods.astral")


@pytest.fixture(scope="module")
def pods_checked(pods):
    return astral_dsl.check(pods)


def test_pods_of_different_sizes_count_their_own_switches(pods_checked):
    from astral_dsl.outputs.size_json import fabric_json
    from astral_dsl.outputs.size_report import bom_lines

    (fabric,) = pods_checked.engineering.fabrics
    leaf, spine, core = fabric.tiers
    assert [(t.switches, t.per_group, t.per_group_text) for t in fabric.tiers] == [
        (40, 2, "1 to 2"), (40, 16, "8 to 16"), (32, 32, "32")]
    assert [(r[0], r[1], r[2]) for r in leaf.sizes] == [(1, "Site.pods[0]", 2),
                                                         (3, "Site.pods[1]", 1)]
    assert [(r[0], r[2]) for r in spine.sizes] == [(1, 16), (3, 8)] and core.sizes == ()
    assert (core.needed, core.rounding is not None) == (20, True)
    assert (leaf.sized_for, spine.sized_for, core.sized_for) == (None, None, None)
    # links: 64 hosts x 8 = 512 host ports; 40 leaves x 32 = 1,280 up; 40 spines x 32 = 1,280
    assert [t.down_links for t in fabric.tiers] == [512, 1280, 1280]
    assert [t.up_links for t in fabric.tiers] == [1280, 1280, 0]
    # power: 112 switches x 1 kW
    assert fabric.switches == 112 and fabric.power_w == pytest.approx(112e3)
    assert [t.power_w for t in fabric.tiers] == pytest.approx([40e3, 40e3, 32e3])
    # links without a medium: one single-port transceiver at each end
    assert [layer.transceivers for layer in fabric.links] == [1024, 2560, 2560]
    doc = fabric_json(fabric)
    assert doc["switches"] == 112 and doc["tiers"][0]["group_sizes"] == [
        {"scope": "Site.pods[0]", "instances": 1, "per_group": 2},
        {"scope": "Site.pods[1]", "instances": 3, "per_group": 1}]
    assert "group_sizes" not in doc["tiers"][2]
    assert "leaf: its groups differ in size, each sized for its own pod: 2 per group in " \
           "`Site.pods[0]`, 1 in `Site.pods[1]` (x3)" in bom_lines(fabric)


def test_pods_of_different_sizes_name_and_cable_only_the_switches_counted(pods):
    from collections import Counter

    from astral_dsl.analyses import cabling, inventory

    design = pods.design
    owners = inventory.owner_replicas(design, list(inventory.parts(design)))
    names = {s.path for s in inventory.switches(design, owners)}
    assert len(names) == 112
    assert Counter(n.split(".")[-1].split("[")[0] for n in names) == {
        "leaf": 40, "spine": 40, "core": 32}
    pod = "Site.fabric.pod[{}].".format
    assert {n for n in names if n.startswith(pod(1)) and ".leaf[" in n} == {
        pod(1) + f"rail[{r}].leaf[0]" for r in range(8)}
    assert pod(0) + "rail[7].leaf[1]" in names and pod(3) + "spine[7]" in names
    assert pod(0) + "spine[15]" in names and pod(3) + "spine[8]" not in names
    # every host port on a switch that exists; every uplink from and to one (no shortage)
    ends = [link[2] for h in cabling.host_links(design, owners) for link in h.links]
    assert len(ends) == 512 and set(ends) <= names
    short: list = []
    links = list(cabling.tier_links(design, owners, None, short))
    assert short == [] and len(links) == 1280 + 1280
    assert {x.lower for x in links} | {x.upper for x in links} | set(ends) == names
    # a Small pod's spine takes its 8 leaves' 32 uplinks / 8 = 4 each: 32 down ports used; a
    # core takes one uplink of each of the 40 spines
    down = Counter(x.upper for x in links)
    assert down[pod(1) + "spine[7]"] == 32 and down[pod(0) + "spine[15]"] == 32
    assert set(v for k, v in down.items() if ".core[" in k) == {40}


def _errors(checked):
    """The errors of the network and its failures (the job's GPU is not forecastable: E758)."""
    return [d for d in checked.diagnostics if d.is_error and d.code.startswith(("E2", "E6"))]


def test_a_failure_of_a_switch_only_the_big_pod_has_is_e214(pods):
    big = astral_dsl.check(pods, ["big_leaf"])
    assert not _errors(big)
    (o,) = big.scenarios
    assert o.result.network_w == pytest.approx(111e3)            # 112 - 1 leaf of 1 kW
    small = astral_dsl.check(pods, ["small_leaf"])
    (err,) = _errors(small)
    assert err.code == "E214" and err.span is not None
    assert err.message == ("`Site.fabric.pod[1].rail[0].leaf[1]`: switch 1 is out of range: "
                           "the `leaf` group has 1 switch (0 to 0); the largest has 2")
    (o,) = small.scenarios
    assert o.result.network_w == pytest.approx(112e3)            # nothing failed
    # a Small pod's spine group is its 8 switches, not the Big pod's 16
    group = astral_dsl.check(pods, ["small_spines"])
    (o,) = group.scenarios
    assert "8 `spine` switches off: 8.0 kW less network power" in o.notes
    assert o.result.network_w == pytest.approx(104e3)


def test_pods_of_different_sizes_rank_map_drill_and_pictures(pods, pods_checked):
    import re

    from astral_dsl.analyses import inventory
    from astral_dsl.analyses.fabric_names import TierKey
    from astral_dsl.diagnose import rank_map
    from astral_dsl.outputs.render import render
    from astral_dsl.synth.network import Net

    rm = rank_map(pods.design)
    spine = TierKey("Site.fabric", "spine", ("pod", 1))
    assert (rm.size_of(spine), rm.size_of(TierKey("Site.fabric", "spine", ("pod", 0)))) == (8, 16)
    # ranks 0..319 on Big's 40 hosts, 320..383 on pods[1]: their ports on leaves that exist
    owners = inventory.owner_replicas(pods.design, list(inventory.parts(pods.design)))
    names = {s.path for s in inventory.switches(pods.design, owners)}
    assert rm.ranks[320].host == "Site.pods[1].racks[0].hosts[0]"
    assert {p.switch for r in (0, 319, 320, 383, 511) for p in rm.ranks[r].ports} <= names
    # the drill's flows climb only through switches that exist (pods[1] -> pods[3])
    flows = Net(rm, (), 0).route(320, 511)
    crossed = {x for flow in flows for x in flow if " -- " not in x and ".fabric." in x}
    assert any(".core[" in x for x in crossed) and crossed <= names
    g = render(pods_checked.design, "pod", "Site.pods[1]", checked=pods_checked)
    drawn = re.findall(r">(\d+) x S<", g.source)            # leaves per rail, spines, cores
    assert sorted(set(drawn), key=int) == ["1", "8", "32"], drawn
    g = render(pods_checked.design, "rack", "Site.pods[2].racks[0]", checked=pods_checked)
    assert "1 per rail in" in g.source and "#0 of 1" in g.source
    g = render(pods_checked.design, "cluster", None, checked=pods_checked)
    assert "1 to 2" in g.source and "8 to 16" in g.source


def test_a_tier_per_rail_over_pods_of_different_sizes():
    # The same pods under a spine per (site, rail): spine group r serves rail r's leaves of
    # every pod, Big's 2 and 3 Small's 1 each: 5 leaves x 32 uplinks = 160 / 64 = 3 needed; each
    # spine takes a link from all 5 (5 <= 64: mesh), so a divisor of 32: 4 per rail, 32 spines
    # (the largest-pod count: 4 pods x 2 leaves = 8 x 32 / 64 = 4, the same 32).
    text = PODS.replace("tier spine { switch = S, scope = pod, down = 32 x 400 Gb/s, "
                        "up = 32 x 400 Gb/s }\n  tier core { switch = S, scope = site, "
                        "down = 64 x 400 Gb/s }",
                        "tier spine { switch = S, scope = site, per = [rail], "
                        "down = 64 x 400 Gb/s }")
    assert text != PODS
    text = text[:text.index("scenario")]                   # they name the pods' spines
    (fabric,) = _check(text).engineering.fabrics
    leaf, spine = fabric.tiers
    assert (leaf.switches, spine.groups, spine.per_group, spine.needed) == (40, 8, 4, 3)
    assert (spine.switches, spine.sizes, spine.down_links) == (32, (), 40 * 32)


def test_a_pod_view_draws_the_group_above_it_of_its_own_hall():
    # Halls of 1 and 4 pods (8 hosts each), a leaf per (pod, rail), a spine per hall (32 down,
    # 32 up), a core per site (64 down). Small hall: 8 leaves x 32 = 256 / 32 = 8 spines (mesh,
    # 8 | 32); Big: 32 leaves -> 1,024 / 32 = 32 (32 <= 32 down: mesh, 32 | 32); cores: 40
    # spines x 32 = 1,280 / 64 = 20, a mesh over 40 <= 64: 32. A pod's view draws its hall's.
    import re

    from astral_dsl.outputs.render import render

    text = PODS[:PODS.index("pod Big")] + """pod P { racks = 2 x R }
hall Big { pods = 4 x P }
hall Small { pods = 1 x P }
""" + _three_tiers("hall") + "site Site { halls = [1 x Small, 1 x Big], fabric = F }\n"
    checked = _check(text)
    (fabric,) = checked.engineering.fabrics
    assert [t.switches for t in fabric.tiers] == [40, 40, 32]
    drawn = {}
    for name in ("Site.halls[0].pods[0]", "Site.halls[1].pods[2]"):
        g = render(checked.design, "pod", name, checked=checked)
        drawn[name] = set(re.findall(r">(\d+) x S<", g.source))
    assert drawn == {"Site.halls[0].pods[0]": {"1", "8", "32"},
                     "Site.halls[1].pods[2]": {"1", "32"}}
