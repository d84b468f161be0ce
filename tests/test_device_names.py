"""Two parts a design names alike (E236, analyses/inventory.py): a `name` pattern that does not
tell its replicas apart (`gpu-{rack}` on the hosts of a rack) gave them one name, in silence: an
inventory's row bound only the first of them, and `astral export --netbox` wrote devices that
NetBox refuses (a device's name is one per site)."""
from __future__ import annotations

import textwrap

import astral_dsl


def _check(tmp_path, text: str):
    (tmp_path / "d.astral").write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return astral_dsl.check(astral_dsl.compile(tmp_path / "d.astral")).diagnostics


def test_a_pattern_that_names_two_hosts_alike_is_e236_at_the_pattern(tmp_path):
    said = _check(tmp_path, """
        gpu G { power = 700 W }
        host H { gpus = 2 x G, power = 3 kW, name = "gpu-{rack}" }
        rack R { hosts = 2 x H, power_limit = 45 kW }
        site S { racks = 3 x R }
    """)
    (e,) = [d for d in said if d.code == "E236"]
    assert e.is_error
    # (the names stand beside the paths, as in every diagnostic)
    assert e.message == ("the name pattern `gpu-{rack}` names gpu-0 (S.racks[0].hosts[1]) as it "
                         "names gpu-0 (S.racks[0].hosts[0]); 2 more part(s) it names as another "
                         "is named")
    assert (e.span.start.line, e.span.start.column) == (2, 45)
    assert "`{host}`" in e.hint and "`{index}`" in e.hint


def test_two_patterns_that_meet_are_e236_and_distinct_names_are_not(tmp_path):
    said = _check(tmp_path, """
        gpu G { power = 700 W }
        host H { gpus = 2 x G, power = 3 kW, name = "n{rack}-{host}" }
        rack R { hosts = 2 x H, power_limit = 45 kW, name = "n{rack}-{index}" }
        site S { racks = 2 x R }
    """)
    # the rack S.racks[0] is `n0-0`, as its first host is
    (e,) = [d for d in said if d.code == "E236"]
    assert e.message == ("the name pattern `n{rack}-{host}` names n0-0 (S.racks[0].hosts[0]) as "
                         "the name pattern `n{rack}-{index}` names n0-0 (S.racks[0]); 1 more "
                         "part(s) it names as another is named")
    assert (e.span.start.line, e.span.start.column) == (2, 45)
    fine = _check(tmp_path, """
        gpu G { power = 700 W }
        host H { gpus = 2 x G, power = 3 kW, name = "gpu-{rack}-{host}" }
        rack R { hosts = 2 x H, power_limit = 45 kW, name = "r{rack}" }
        site S { racks = 2 x R }
    """)
    assert not [d for d in fine if d.is_error]


def test_a_tier_whose_switches_share_a_name_is_e236_at_the_tier(tmp_path):
    from test_netbox import DESIGN

    text = DESIGN.replace('name = "leaf-{block}-{rail}"', 'name = "leaf-{rail}"')
    said = _check(tmp_path, text)
    (e,) = [d for d in said if d.code == "E236"]
    assert e.message.startswith("the name pattern `leaf-{rail}` names leaf-0 (Cluster.fabric"
                                ".block[1].rail[0].leaf[0]) as it names leaf-0 (Cluster.fabric"
                                ".block[0].rail[0].leaf[0]); 7 more")
    line = text[:text.index('name = "leaf-{rail}"')].count("\n") + 1
    assert e.span.start.line == line
    assert not [d for d in _check(tmp_path, DESIGN) if d.code == "E236"]


def test_a_tier_pattern_with_a_placeholder_its_switches_lack_is_e235_at_the_tier(tmp_path):
    """A tier's `name` pattern was not checked for its placeholders: `leaf-{pod}-{rail}` on a
    tier of a site without pods gave `leaf-{pod}-0` to the leaf of rail 0 of each block (the
    export wrote them, one name twice), and E236 leaves out what E235 says."""
    from test_netbox import DESIGN

    text = DESIGN.replace('name = "leaf-{block}-{rail}"', 'name = "leaf-{pod}-{rail}"')
    said = _check(tmp_path, text)
    (e,) = [d for d in said if d.code == "E235"]
    assert e.message == ("the name pattern `leaf-{pod}-{rail}` names `{pod}`, which "
                         "leaf-{pod}-0 (Cluster.fabric.block[0].rail[0].leaf[0]) does not have")
    at = text.index('"leaf-{pod}-{rail}"')            # the pattern's string
    line, column = text[:at].count("\n") + 1, at - text.rindex("\n", 0, at)
    assert (e.span.start.line, e.span.start.column) == (line, column)
    assert "`{block}`" in e.hint and "`{rail}`" in e.hint
    assert not [d for d in said if d.code == "E236"]


def test_a_nic_pattern_without_port_on_a_two_port_nic_is_e237_at_the_nic(tmp_path):
    """`eth{nic}` on a NIC of 2 ports gave both ports of each NIC one interface name: the
    device type's YAML listed `eth0` twice, which NetBox refuses (one interface, and one
    interface template, of a name per device and device type)."""
    text = """
        gpu G { power = 700 W }
        nic N { ports = 2, port_speed = 400 Gb/s, name = "eth{nic}" }
        host H { gpus = 2 x G, nics = 2 x N, power = 3 kW, name = "gpu-{host}" }
        site S { hosts = 2 x H }
    """
    said = _check(tmp_path, text)
    (e,) = [d for d in said if d.code == "E237"]
    assert e.is_error
    assert e.message == ("the name pattern `eth{nic}` gives nics[0].port[b] of host H the "
                         "interface name `eth0`, as it gives nics[0].port[a]; 1 more port it "
                         "names as another: NetBox takes an interface's name once per device "
                         "(dcim.Interface and dcim.InterfaceTemplate: UniqueConstraint of "
                         "device, or device type, and name)")
    assert (e.span.start.line, e.span.start.column) == (2, 50)
    assert "`{port}`" in e.hint
    fine = _check(tmp_path, text.replace('"eth{nic}"', '"eth{nic}p{port}"'))
    assert not [d for d in fine if d.is_error]
    # one port a NIC: `{nic}` alone tells them apart; `{port}` alone on two NICs does not
    one = text.replace("ports = 2", "ports = 1")
    assert not [d for d in _check(tmp_path, one) if d.is_error]
    (e,) = [d for d in _check(tmp_path, one.replace('"eth{nic}"', '"eth{port}"'))
            if d.code == "E237"]
    assert e.message.startswith("the name pattern `eth{port}` gives nics[1].port[a] of host H "
                                "the interface name `eth0`, as it gives nics[0].port[a]: ")
    assert "`{nic}`" in e.hint


def test_a_nic_pattern_with_a_placeholder_a_port_lacks_is_e235(tmp_path):
    """`eth{rack}` on a NIC was written as it stands, `eth{rack}` for every port."""
    said = _check(tmp_path, """
        gpu G { power = 700 W }
        nic N { ports = 1, port_speed = 400 Gb/s, name = "eth{rack}" }
        host H { gpus = 2 x G, nics = 2 x N, power = 3 kW }
        site S { hosts = 2 x H }
    """)
    (e,) = [d for d in said if d.code == "E235"]
    assert e.message.startswith("the name pattern `eth{rack}` names `{rack}`, which ")
    assert (e.span.start.line, e.span.start.column) == (2, 50)
    assert not [d for d in said if d.code == "E237"]


def test_a_tier_of_a_pods_fabric_names_its_pod(tmp_path):
    """The switches of a fabric each pod holds have the kinds on their pod's path: `{pod}`
    was E235 (and, before it, written as it stands), so no pattern told two pods' leaves apart."""
    from test_netbox import DESIGN

    text = DESIGN[:DESIGN.index("inventory Fleet")].replace(
        "site Cluster {\n  sus = 2 x SU\n  fabric = Compute\n}",
                          "pod P {\n  sus = 2 x SU\n  fabric = Compute\n}\n"
                          "site Cluster { pods = 2 x P }").replace(
        'name = "leaf-{block}-{rail}"', 'name = "leaf-{pod}-{block}-{rail}"').replace(
        'scope = site, down = 64 x 400 Gb/s, name = "spine-{index:02}"',
        'scope = pod, down = 64 x 400 Gb/s, name = "spine-{pod}-{index:02}"').replace(
        'name = "gpu-{block}-{rack:03}-{host}"', 'name = "gpu-{pod}-{block}-{rack:03}-{host}"'
    ).replace('name = "r{block}-{rack+1:02}"', 'name = "r{pod}-{block}-{rack+1:02}"')
    assert "pods = 2 x P" in text and "spine-{pod}" in text
    said = _check(tmp_path, text)
    assert not [d for d in said if d.is_error], [d.message for d in said if d.is_error]
    (tmp_path / "d.astral").write_text(textwrap.dedent(text), encoding="utf-8")
    from astral_dsl.analyses.inventory import named_parts

    names = {name for kind, name in named_parts(astral_dsl.compile(
        tmp_path / "d.astral").design).named.values() if kind == "switch"}
    assert {"leaf-0-0-0", "leaf-1-1-7", "spine-0-00", "spine-1-00"} <= names


def test_racks_of_each_row_numbered_alike_are_not_e236_unless_an_inventory_binds_by_name(
        tmp_path):
    """NetBox keeps a rack's name unique per location (dcim.Rack), and the export writes each
    rack in its row: the racks of each row numbered from 1 (`R{rack+1:02}`), a legitimate
    scheme, were refused by E236 wherever they were; so were the hosts of two sites laid out
    alike (a device's name is unique per site). They are E236 where an inventory binds its rows
    by name (its row would bind the first part of the name)."""
    rows = """
        gpu G { power = 700 W }
        host H { gpus = 2 x G, power = 3 kW, name = "gpu-{row}-{rack}-{host}" }
        rack R { hosts = 2 x H, power_limit = 45 kW, name = "R{rack+1:02}" }
        row W { racks = 2 x R, name = "row{row}" }
        site A { rows = 2 x W }
    """
    assert not [d for d in _check(tmp_path, rows) if d.is_error]
    (tmp_path / "fleet.csv").write_text("name,serial\n", encoding="utf-8")
    by_name = '\n        inventory Fleet { file = "fleet.csv" }\n'
    by_path = '\n        inventory Fleet { file = "fleet.csv", columns { path = "serial" } }\n'
    (e,) = [d for d in _check(tmp_path, rows + by_name) if d.code == "E236"]
    assert e.message.startswith("the name pattern `R{rack+1:02}` names R01 (A.rows[1].racks[0]) "
                                "as it names R01 (A.rows[0].racks[0]); 1 more")
    assert not [d for d in _check(tmp_path, rows + by_path) if d.code == "E236"]
    # a rack named as a host of another row, and two racks of one row named alike, still are
    said = [d.message for d in _check(tmp_path, rows.replace('"R{rack+1:02}"',
                                                             '"gpu-0-0-{index}"'))
            if d.code == "E236"]
    # (the racks of row 1 among the 2 more: named as hosts of row 0, not as racks of row 0)
    assert "the name pattern `gpu-0-0-{index}` names gpu-0-0-1 (A.rows[0].racks[1]) as the " \
           "name pattern `gpu-{row}-{rack}-{host}` names gpu-0-0-1 (A.rows[0].racks[0]." \
           "hosts[1]); 2 more part(s) it names as another is named" in said
    (e,) = [d for d in _check(tmp_path, rows.replace('"R{rack+1:02}"', '"R"')) if d.code == "E236"]
    assert e.message.startswith("the name pattern `R` names R (A.rows[0].racks[1]) as it names R "
                                "(A.rows[0].racks[0]); 1 more")     # and row 1's second
    # the hosts of two sites laid out alike: NetBox keeps a device's name unique per site
    # (cables.csv names each end's site), so not E236 but where an inventory binds by name
    sites = """
        gpu G { power = 700 W }
        host H { gpus = 2 x G, power = 3 kW, name = "gpu-{rack}-{host}" }
        rack R { hosts = 2 x H, power_limit = 45 kW }
        site A { racks = 2 x R }
        site B { racks = 2 x R }
    """
    assert not [d for d in _check(tmp_path, sites) if d.is_error]
    (e,) = [d for d in _check(tmp_path, sites + by_name) if d.code == "E236"]
    assert e.message.startswith("the name pattern `gpu-{rack}-{host}` names gpu-0-0 "
                                "(B.racks[0].hosts[0]) as it names gpu-0-0 (A.racks[0].hosts[0])")
    assert not [d for d in _check(tmp_path, sites + by_path) if d.code == "E236"]
