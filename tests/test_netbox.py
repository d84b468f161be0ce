"""Inventory in and out (issue #25, item 1): `astral export --netbox DIR` writes what NetBox's
bulk import takes (CSV columns NetBox's import forms accept, listed below; device-type YAML valid
against the devicetype-library's schema, tests/fixtures/netbox); an `inventory` file binds real
names, serials and asset tags to the design's parts, which then stand beside their paths in
check, diagnose, render and report output; a row that names no part is a diagnostic at its
line."""
from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import pytest

import astral_dsl
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# NetBox 4.7.3's bulk import (dcim/forms/bulk_import.py, read from the netbox wheel: see
# tests/fixtures/netbox/README.md): the columns each form accepts (its Meta.fields and the fields
# it and its bases declare: `id` of CSVModelForm, `tags` of NetBoxModelImportForm, `owner` of
# OwnerCSVMixin; custom fields aside), and those it requires: a field it declares without
# `required=False`; a model field in its Meta.fields that is not `blank`, default or not (Django's
# model forms require it: a device role's `color`, a device type's `u_height`, a feed's
# `voltage`, `amperage`, `max_utilization`); and a rack's `width` and `u_height`, which
# RackImportForm.clean() requires of a rack without a `rack_type`
_ALL = {"id", "owner", "tags"}
NETBOX = {
    "sites.csv": (_ALL | {"name", "slug", "status", "region", "group", "tenant", "facility",
                          "time_zone", "description", "physical_address", "shipping_address",
                          "latitude", "longitude", "comments"}, {"name", "slug", "status"}),
    "locations.csv": (_ALL | {"site", "parent", "name", "slug", "status", "tenant", "facility",
                              "description", "comments"}, {"site", "name", "slug", "status"}),
    "racks.csv": (_ALL | {"site", "location", "group", "name", "facility_id", "tenant", "status",
                          "role", "rack_type", "form_factor", "serial", "asset_tag", "width",
                          "u_height", "desc_units", "outer_width", "outer_height",
                          "outer_depth", "outer_unit", "mounting_depth", "airflow",
                          "cooling_capability", "cooling_capacity", "weight", "max_weight",
                          "weight_unit", "description", "comments"},
                  {"site", "name", "status", "width", "u_height"}),
    "manufacturers.csv": (_ALL | {"name", "slug", "description", "comments"}, {"name", "slug"}),
    "device_roles.csv": (_ALL | {"name", "slug", "parent", "color", "vm_role",
                                 "config_template", "description", "comments"},
                         {"name", "slug", "color"}),
    "device_types.csv": (_ALL | {"manufacturer", "default_platform", "model", "slug",
                                 "part_number", "u_height", "exclude_from_utilization",
                                 "is_full_depth", "subdevice_role", "airflow", "cooling_method",
                                 "end_of_life", "description", "weight", "weight_unit",
                                 "comments"}, {"manufacturer", "model", "slug", "u_height"}),
    "devices.csv": (_ALL | {"role", "tenant", "manufacturer", "device_type", "platform", "name",
                            "serial", "asset_tag", "status", "site", "location", "rack",
                            "position", "face", "latitude", "longitude", "parent",
                            "device_bay", "airflow", "cooling_method", "virtual_chassis",
                            "vc_position", "vc_priority", "cluster", "description",
                            "config_template", "comments"},
                    {"role", "manufacturer", "device_type", "status", "site"}),
    # (the form requires the sides' types and names; a side's device or power panel its clean())
    "cables.csv": (_ALL | {"side_a_site", "side_a_device", "side_a_power_panel", "side_a_type",
                           "side_a_name", "side_b_site", "side_b_device", "side_b_power_panel",
                           "side_b_type", "side_b_name", "type", "profile", "bundle", "status",
                           "tenant", "label", "color", "length", "length_unit", "description",
                           "comments"},
                   {"side_a_device", "side_a_type", "side_a_name", "side_b_device",
                    "side_b_type", "side_b_name"}),
    "power_panels.csv": (_ALL | {"site", "location", "name", "description", "comments"},
                         {"site", "name"}),
    "power_feeds.csv": (_ALL | {"site", "power_panel", "location", "rack", "name", "status",
                                "type", "mark_connected", "supply", "phase", "voltage",
                                "amperage", "max_utilization", "tenant", "description",
                                "comments"},
                        {"site", "power_panel", "name", "status", "type", "supply", "phase",
                         "voltage", "amperage", "max_utilization"}),
}


def _cli(*args, cwd=REPO):
    return _astral_cli(*args, cwd=cwd)


def _header(path: Path):
    with open(path, encoding="utf-8", newline="") as fh:
        return next(csv.reader(fh))


def _rows(path: Path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _valid_device_types(folder: Path) -> int:
    import jsonschema
    import yaml

    schema = json.loads((FIXTURES / "netbox" / "devicetype.schema.json").read_text())
    checker = jsonschema.Draft7Validator(schema)
    found = sorted((folder / "device-types").rglob("*.yaml"))
    for path in found:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        errors = [e.message for e in checker.iter_errors(doc)]
        assert not errors, (path, errors)
    return len(found)


def _netbox_columns(folder: Path) -> None:
    for name, (allowed, required) in NETBOX.items():
        header = _header(folder / name)
        assert set(header) <= allowed, (name, set(header) - allowed)
        assert required <= set(header), (name, required - set(header))
        assert len(header) == len(set(header)), name


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("netbox") / "astral"
    proc = _cli("export", "examples/astral.astral", "--netbox", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, proc.stdout


def test_export_of_the_reference_design(reference):
    folder, stdout = reference
    _netbox_columns(folder)
    # the host, the switch model (agg and core use its 128 x 400G ports) and the ToR's own
    # layout of it: 128 x 200G breakouts down, 64 x 400G up
    assert _valid_device_types(folder) == 3
    assert "devices.csv: 86,016 row(s)" in stdout        # 65,536 hosts and 20,480 switches
    # each of 8 x 2 ports of every host, then 64 uplinks of each of 8,192 ToRs and 8,192 aggs
    assert "cables.csv: 2,097,152 row(s)" in stdout
    assert "locations.csv: 1,032 row(s)" in stdout       # 8 pods and 1,024 rows
    with open(folder / "devices.csv", encoding="utf-8", newline="") as fh:
        first = next(csv.DictReader(fh))
    assert first["description"] == "Astral.pods[0].rows[0].racks[0].hosts[0]"
    assert first["rack"] == "Astral.pods[0].rows[0].racks[0]" and first["position"] == "1"
    with open(folder / "cables.csv", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        a, b = next(reader), next(reader)
    # port a and port b of NIC 0 land on plane A's and plane B's ToR of rail 0
    assert (a["side_b_device"], b["side_b_device"]) == (
        "Astral.fabric.pod[0].rail[0].plane[A].tor[0]",
        "Astral.fabric.pod[0].rail[0].plane[B].tor[0]")
    assert a["side_a_name"] == "nics[0].port[a]" and a["side_b_name"] == "p1"


def test_the_reference_tiers_are_cabled_as_a_clos(reference):
    folder, _ = reference
    per_core: dict = {}
    cores_of_agg0: dict = {}
    with open(folder / "cables.csv", encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
        side_a, side_b = header.index("side_a_device"), header.index("side_b_device")
        # the 2 million lines read as CSV only where a core is named, as lists (the 524,288
        # rows as dicts took seconds)
        for c in csv.reader(line for line in fh if ".core[" in line):
            if ".core[" not in c[side_b]:
                continue
            per_core[c[side_b]] = per_core.get(c[side_b], 0) + 1
            if c[side_a].endswith(".agg[0]"):
                cores_of_agg0.setdefault(c[side_a], set()).add(c[side_b])
    # 4,096 cores of 128 down ports, each port taken once by the 8,192 aggs' 64 uplinks
    assert len(per_core) == 4096 and set(per_core.values()) == {128}
    # agg 0 of each of the 128 (pod, rail, plane) groups lands on the same 64 cores, so that
    # every group reaches every other through each of them
    assert len(cores_of_agg0) == 128
    assert len({frozenset(v) for v in cores_of_agg0.values()}) == 1
    assert len(next(iter(cores_of_agg0.values()))) == 64


def test_uplinks_beyond_the_upper_tiers_ports_are_counted_not_cabled():
    from astral_dsl.analyses.cabling import Short, _uplinks
    from astral_dsl.analyses.fabric_names import TierKey

    class Tier:                       # the TierCount fields the wiring reads
        def __init__(self, name, per_group, down_ports, up_ports):
            self.name, self.per_group = name, per_group
            self.down_ports, self.up_ports = down_ports, up_ports

        def size(self, scope, rail=None, plane=None):     # every group alike (TierCount)
            return self.per_group

    lo, hi = Tier("leaf", 3, 8, 4), Tier("spine", 2, 5, 0)
    lower, upper = TierKey("F", "leaf"), TierKey("F", "spine")
    short: list = []
    links = list(_uplinks(lo, hi, {lower: upper}, "F", short))
    # 3 leaves x 4 uplinks = 12, round-robin over 2 spines of 5 down ports: 10 cabled
    assert len(links) == 10 and short == [Short("leaf", "F", 2)]
    assert [(x.lower_port, x.upper, x.upper_port) for x in links[:4]] == [
        (8, "F.spine[0]", 0), (9, "F.spine[1]", 0), (10, "F.spine[0]", 1),
        (11, "F.spine[1]", 1)]


def test_export_of_the_dgx_superpod(tmp_path):
    out = tmp_path / "dgx"
    proc = _cli("export", "examples/dgx_superpod.astral", "--netbox", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    _netbox_columns(out)
    assert _valid_device_types(out) == 2
    devices = _rows(out / "devices.csv")
    hosts = [d for d in devices if d["role"] == "GPU server"]
    switches = [d for d in devices if d["role"] == "Switch"]
    # 4 SUs of 32 DGX B200; 8 leaves per SU and 16 spines (the reference architecture's counts)
    assert (len(hosts), len(switches)) == (128, 48)
    assert {h["manufacturer"] for h in hosts} == {"NVIDIA"}
    assert [h["position"] for h in hosts[:4]] == ["1", "11", "21", "31"]    # 10U each
    cables = _rows(out / "cables.csv")
    # each DGX's 8 ports to its rail's leaf, then each leaf's 32 uplinks to the spines
    assert len(cables) == 128 * 8 + 32 * 32
    # a leaf takes 32 hosts down: its port numbers run 1..32
    ports = {c["side_b_name"] for c in cables if c["side_b_device"].endswith("leaf[0]")}
    assert ports == {f"p{i}" for i in range(1, 33)}
    # the uplinks: a leaf's p33..p64 each once, a spine's 64 down ports each once, and every
    # leaf on every one of the 16 spines twice (the reference architecture's non-blocking
    # two-tier fabric)
    up = [c for c in cables if "spine" in c["side_b_device"]]
    assert len(up) == 32 * 32
    by_leaf: dict = {}
    by_spine: dict = {}
    for c in up:
        by_leaf.setdefault(c["side_a_device"], []).append(c["side_a_name"])
        by_spine.setdefault(c["side_b_device"], []).append(c["side_b_name"])
    assert len(by_leaf) == 32 and all(sorted(v) == sorted(f"p{i}" for i in range(33, 65))
                                      for v in by_leaf.values())
    assert len(by_spine) == 16 and all(sorted(v) == sorted(f"p{i}" for i in range(1, 65))
                                       for v in by_spine.values())
    pairs = {(c["side_a_device"], c["side_b_device"]) for c in up}
    assert len(pairs) == 32 * 16

    feeds = _rows(out / "power_feeds.csv")
    assert {(f["name"], f["voltage"], f["amperage"]) for f in feeds
            if f["description"] == "SuperPOD.sus[0].racks[0]".rsplit(".", 1)[0] + ".a"} \
        <= {("a", "415", "1200")}
    net = [f for f in feeds if f["description"] == "SuperPOD.net_a"]
    assert len(net) == 4 and {f["amperage"] for f in net} == {"80"}      # count = 4, 80 A


def test_the_export_is_the_same_byte_for_byte(tmp_path):
    for name in ("a", "b"):
        assert _cli("export", "examples/dgx_superpod.astral", "--netbox",
                    str(tmp_path / name)).returncode == 0
    for path in sorted((tmp_path / "a").rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")) \
                .read_bytes(), path


# ---- an inventory in ------------------------------------------------------------------------------
DESIGN = """\
import stdlib.hardware { H100, CX7_400G, HGX8, QM9700_NDR }
import stdlib.models { Llama3_8B }

nic IB = CX7_400G(protocol = infiniband) { name = "ib{nic}" }
host Node = HGX8(gpu = H100, nic = IB) {
  name = "gpu-{block}-{rack:03}-{host}"
}
rack GpuRack {
  hosts = 4 x Node
  name = "r{block}-{rack+1:02}"
  check power <= 40 kW else warning "above 40 kW"
}
block SU { racks = 2 x GpuRack }
fabric Compute {
  rails = 8, planes = 1
  tier leaf {
    switch = QM9700_NDR, scope = block, per = [rail]
    down = 32 x 400 Gb/s, up = 32 x 400 Gb/s, name = "leaf-{block}-{rail}"
  }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s, name = "spine-{index:02}" }
}
site Cluster {
  sus = 2 x SU
  fabric = Compute
}
job train {
  model = Llama3_8B
  placement = Cluster
  gpus = 128
  parallel { tp = 8, pp = 1, dp = 16 }
  batch { global_batch = 64, micro = 1, seq = 4096 }
}
inventory Fleet {
  file = "fleet.csv"
  columns { serial = "Serial Number", asset_tag = "Asset Tag" }
  required = [host]
}
"""


def _fleet(rows):
    lines = ["name,Serial Number,Asset Tag"]
    lines += [f"{name},{serial},{tag}" for name, serial, tag in rows]
    return "\n".join(lines) + "\n"


def _hosts():
    return [(f"gpu-{b}-{r:03}-{h}", f"SN{b}{r}{h}", f"AT-{b}{r}{h}")
            for b in range(2) for r in range(2) for h in range(4)]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "fleet.astral").write_text(DESIGN, encoding="utf-8")
    (tmp_path / "fleet.csv").write_text(_fleet(_hosts()), encoding="utf-8")
    return tmp_path


def test_switch_ports_past_the_names_made_once_are_named_alike(project, tmp_path, monkeypatch):
    from astral_dsl.outputs import netbox

    p, n = netbox.port_labels()
    # index from 0, name from 1: the reference's ToR uplink 0 is port 129 (128 down ports)
    assert (p[128], n[128], p[0], len(p)) == ("p129", "129", "p1", netbox.PORTS)
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    netbox.write(checked.design, str(tmp_path / "kept"), checked.devices)
    monkeypatch.setattr(netbox, "PORTS", 4)       # only p1..p4 made once: the rest each time
    netbox.port_labels.cache_clear()
    try:
        netbox.write(checked.design, str(tmp_path / "made"), checked.devices)
    finally:
        netbox.port_labels.cache_clear()
    cables = (tmp_path / "kept" / "cables.csv").read_bytes()
    assert (tmp_path / "made" / "cables.csv").read_bytes() == cables
    # a leaf per block and rail (2 x 8), its 32 down ports then its 32 uplinks: p33 .. p64,
    # each to a spine's down port
    ups = [r for r in _rows(tmp_path / "kept" / "cables.csv") if "spine" in r["side_b_device"]]
    assert len(ups) == 2 * 8 * 32 and {r["side_a_name"] for r in ups} == {
        f"p{k}" for k in range(33, 65)}
    assert ups[0]["description"] == \
        "Cluster.fabric.block[0].rail[0].leaf[0] port 33 -- Cluster.fabric.spine[0]"


def test_the_inventory_binds_and_names_stand_beside_paths(project):
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    assert checked.valid, checked.diagnostics
    devices = checked.devices
    host = devices.by_path["Cluster.sus[1].racks[0].hosts[2]"]
    assert (host.name, host.serial, host.asset_tag, host.line) == ("gpu-1-000-2", "SN102",
                                                                   "AT-102", 12)
    assert devices.name_of("Cluster.fabric.block[1].rail[3].leaf[0]") == "leaf-1-3"
    w500 = next(d for d in checked.diagnostics if d.code == "W500")
    assert "in 4 instances, e.g. r0-01 (Cluster.sus[0].racks[0])" in w500.notes
    assert devices.label("Cluster.sus[0].racks[1].hosts[3].nics[4].port[a]") == \
        "gpu-0-001-3 (Cluster.sus[0].racks[1].hosts[3]).nics[4].port[a]"
    # the text and JSON of `astral check`
    proc = _cli("check", "fleet.astral", cwd=project)
    assert "e.g. r0-01 (Cluster.sus[0].racks[0])" in proc.stdout, proc.stdout
    doc = json.loads(_cli("check", "fleet.astral", "--format", "json", cwd=project).stdout)
    assert any("r0-01 (Cluster.sus[0].racks[0])" in n for d in doc["diagnostics"]
               for n in d.get("notes", []))


def test_a_bad_row_is_a_diagnostic_at_its_line(project):
    rows = _hosts()
    rows.insert(3, ("gpu-9-000-0", "SNX", "ATX"))          # line 5: no such host
    rows.append(rows[0])                                    # line 18: gpu-0-000-0 again
    (project / "fleet.csv").write_text(_fleet(rows), encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    w231 = [d for d in checked.diagnostics if d.code == "W231"]
    assert len(w231) == 1 and w231[0].span.file.endswith("fleet.csv")
    assert (w231[0].span.start.line, w231[0].span.start.column) == (5, 1)
    assert w231[0].span.end.column == len("gpu-9-000-0,SNX,ATX") + 1
    assert "name `gpu-9-000-0`" in w231[0].message
    e233 = [d for d in checked.diagnostics if d.code == "E233"]
    assert len(e233) == 1 and e233[0].span.start.line == 19
    assert "gpu-0-000-0 (Cluster.sus[0].racks[0].hosts[0])" in e233[0].message
    # the CLI shows the CSV line itself
    proc = _cli("check", "fleet.astral", cwd=project)
    assert "5 | gpu-9-000-0,SNX,ATX" in proc.stdout, proc.stdout


def test_a_required_part_without_a_row_is_e232(project):
    (project / "fleet.csv").write_text(_fleet(_hosts()[:-1]), encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E232"]
    assert e.message.startswith("1 host(s) of the design have no row in the inventory")
    assert "gpu-1-001-3 (Cluster.sus[1].racks[1].hosts[3])" in e.message
    line = DESIGN.splitlines().index('  file = "fleet.csv"') + 1        # the inventory's file
    assert e.span.file.endswith("fleet.astral") and e.span.start.line == line


def test_unreadable_inventories(project):
    (project / "fleet.csv").unlink()
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    assert [d.code for d in checked.diagnostics if d.is_error] == ["E230"]
    (project / "fleet.csv").write_text("host,serial\nx,y\n", encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E234"]
    assert "no column `name`" in e.message
    text = DESIGN.replace('file = "fleet.csv"', 'file = "../outside.csv"')
    (project / "fleet.astral").write_text(text, encoding="utf-8")
    (project.parent / "outside.csv").write_text("name\n", encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E230"]
    assert "outside the project" in e.message


def test_netbox_json_binds_by_the_exported_path(project):
    """The round trip: devices exported to NetBox and listed back by its API bind by the path
    the export writes in `description`, and take NetBox's names."""
    devices = [{"id": i, "name": f"node-{i:03}", "serial": f"S{i}", "asset_tag": None,
                "description": path, "device_type": {"model": "Node"}}
               for i, path in enumerate(
                   f"Cluster.sus[{b}].racks[{r}].hosts[{h}]"
                   for b in range(2) for r in range(2) for h in range(4))]
    (project / "netbox.json").write_text(json.dumps({"count": 16, "results": devices}))
    text = DESIGN.replace('file = "fleet.csv"', 'file = "netbox.json"').replace(
        'columns { serial = "Serial Number", asset_tag = "Asset Tag" }',
        'columns { path = "description" }')
    (project / "fleet.astral").write_text(text, encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(project / "fleet.astral"))
    assert checked.valid, checked.diagnostics
    assert checked.devices.name_of("Cluster.sus[0].racks[0].hosts[1]") == "node-001"
    assert checked.devices.by_path["Cluster.sus[1].racks[1].hosts[3]"].serial == "S15"


def test_names_in_render_diagnose_and_report(project, tmp_path):
    out = tmp_path / "rack.dot"
    proc = _cli("render", "fleet.astral", "-o", str(out), "--view", "rack", "--name",
                "Cluster.sus[1].racks[0]", cwd=project)
    assert proc.returncode == 0, proc.stderr
    dot = out.read_text()
    assert "gpu-1-000-2 (host 2)" in dot and "leaf-1-3" in dot and "r1-01" in dot
    # the review page: its diagnostics carry the names
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import build

    page = build(collect(astral_dsl.compile(project / "fleet.astral"), views=()))
    assert "r0-01 (Cluster.sus[0].racks[0])" in page
    # a diagnosis names the suspect device
    from astral_dsl import diagnose, seer
    from astral_dsl.synth import Fault, generate, write

    design = astral_dsl.load(project / "fleet.astral")
    rm = diagnose.rank_map(design)
    port = rm.ranks[40].ports[0]
    log = tmp_path / "log.csv"
    write.write_log(generate(seer.forecast(design), rm, [Fault("nic_port", port.name, 0.5, 100)],
                             seed=4), str(log))
    proc = _cli("diagnose", "fleet.astral", "--observed", str(log), "--format", "json",
                cwd=project)
    doc = json.loads(proc.stdout)
    import jsonschema      # the suspects' device and label are the schema's (it had refused them)

    jsonschema.validate(doc, json.loads((Path(__file__).resolve().parents[1] / "schema" /
                                         "diagnosis.schema.json").read_text()))
    first = doc["suspects"][0]
    assert first["kind"] == "nic port" and port.name in first["parts"]
    # rank 40's DP group is one NIC on each of 16 hosts, all crossed by the same 3 slow
    # collectives: the suspect is the set ("one of the 16 NICs of the 16 hosts ..."), no one
    # device, its hosts named by their devices in the label
    assert first["path"].startswith("one of the 16 NICs of the 16 hosts") and \
        "device" not in first
    assert "gpu-0-000-0 (Cluster.sus[0].racks[0].hosts[0]) to gpu-1-001-3 " \
        "(Cluster.sus[1].racks[1].hosts[3])" in first["label"]
    # one part: its device beside it (name, serial, the longest path it names)
    from astral_dsl.outputs.diagnosis import _named
    from astral_dsl.pipeline import devices

    found, _ = devices(astral_dsl.compile(project / "fleet.astral"), design)
    one = _named(port.name, found)
    host = port.name.split(".nics[")[0]
    assert one["device"]["path"] == host and one["device"]["name"].startswith("gpu-")
    assert one["device"]["serial"].startswith("SN")
    assert one["label"].startswith(one["device"]["name"] + f" ({host})")
    text = _cli("diagnose", "fleet.astral", "--observed", str(log), cwd=project).stdout
    assert "one of the 16 NICs of the 16 hosts gpu-0-000-0 (Cluster.sus[0].racks[0].hosts[0])" in text
    assert "e.g. r0-01 (Cluster.sus[0].racks[0])" in text


def test_export_names_from_the_inventory(project, tmp_path):
    out = tmp_path / "nb"
    proc = _cli("export", "fleet.astral", "--netbox", str(out), cwd=project)
    assert proc.returncode == 0, proc.stderr
    _netbox_columns(out)
    assert _valid_device_types(out) == 2
    rows = {r["description"]: r for r in _rows(out / "devices.csv")}
    host = rows["Cluster.sus[1].racks[0].hosts[2]"]
    assert (host["name"], host["serial"], host["asset_tag"], host["rack"]) == (
        "gpu-1-000-2", "SN102", "AT-102", "r1-01")
    cable = _rows(out / "cables.csv")[0]
    assert (cable["side_a_device"], cable["side_a_name"], cable["side_b_device"]) == (
        "gpu-0-000-0", "ib0", "leaf-0-0")
    import yaml

    node = yaml.safe_load(next((out / "device-types").rglob("*node.yaml")).read_text())
    assert [i["name"] for i in node["interfaces"]] == [f"ib{k}" for k in range(8)]
    assert {i["type"] for i in node["interfaces"]} == {"infiniband-ndr"}


def test_a_pattern_with_a_placeholder_the_part_lacks_is_e235(tmp_path):
    (tmp_path / "d.astral").write_text(textwrap.dedent("""
        gpu G { power = 700 W }
        host H { gpus = 8 x G, name = "h-{pod}-{host}" }
        rack R { hosts = 2 x H }
        site S { racks = 2 x R }
    """), encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(tmp_path / "d.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E235"]
    assert "`{pod}`" in e.message


@pytest.mark.parametrize("row", [
    ("a", "b c", "Astral.pods[0].racks[1]", "p1"), ("", "", ""), ("",), (), ("x",),
    ("a,b", "c"), ('say "hi"', "d"), ("two\nlines", "e"), ("cr\r", "f"), (" lead", "trail "),
    ("1", 2, 3.5), ("none", None), ("ünï", "☃")])
def test_plain_lines_are_what_the_csv_writer_writes(row):
    """The exporter joins a row itself when no field needs quoting (csv's writer costs ten
    times as much): the bytes are csv's, and every other row goes to csv."""
    import io

    from astral_dsl.outputs.netbox_csv import plain_line

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    line = plain_line(row)
    assert line is None or line == buf.getvalue()
    if all(isinstance(v, str) for v in row) and not any(c in "".join(row) for c in ',"\r\n') \
            and "".join(row):
        assert line is not None           # the common case takes the fast road


def test_a_device_types_yaml_holds_the_designs_text_exactly():
    """A vendor or source with `\\n` (the language's one line-break escape) was written into a
    double-quoted YAML scalar as a line break, which YAML folds into a space: the device type's
    manufacturer read "A B" where manufacturers.csv said "A\\nB". Control characters, which
    YAML does not allow at all, made the file unreadable."""
    import yaml

    from astral_dsl.outputs.netbox import _q

    for text in ("Acme\nLabs", 'say "hi" \\ back', "tab\there", "bell\x07 del\x7f nel\x85",
                 "ls\u2028ps\u2029 bom\ufeff", "ünï ☃", ""):
        assert yaml.safe_load(f"x: {_q(text)}\n")["x"] == text, text
    assert _q("A\nB") == '"A\\u000aB"'


def _keys_resolve(folder: Path) -> None:
    """What NetBox's import keys by is unique, and every device names a manufacturer and a
    device type of the files, whose YAML describes that device."""
    makers = _rows(folder / "manufacturers.csv")
    types = _rows(folder / "device_types.csv")
    for rows, key in ((makers, "slug"), (makers, "name"), (types, "slug")):
        assert len({r[key] for r in rows}) == len(rows), (key, rows)
    assert len({(r["manufacturer"], r["model"].lower()) for r in types}) == len(types), types
    places = _rows(folder / "sites.csv") + _rows(folder / "locations.csv")
    assert len({r["slug"] for r in places}) == len(places), places
    pairs = {(r["manufacturer"], r["model"]) for r in types}
    for device in _rows(folder / "devices.csv"):
        assert (device["manufacturer"], device["device_type"]) in pairs, device


NAMESAKES = """\
gpu G { power = 700 W }
nic N1 { ports = 1, port_speed = 400 Gb/s }
nic N2 { ports = 2, port_speed = 200 Gb/s }
host Node(n: nic = N1) {
  gpus = 8 x G, nics = 2 x n, power = 10 kW, vendor = "Acme Inc", name = "h{row}-{host}"
}
host NODE { gpus = 4 x G, power = 5 kW, vendor = "acme-inc", name = "h{row}-{host}" }
rack R { hosts = [Node, Node(n = N2), NODE], power_limit = 45 kW, name = "r{row}" }
row Row { racks = 1 x R, name = "row{row}" }
site S { %s = 2 x Row }
""" % ("rows_of_a_hall_" * 8)     # its paths past NetBox's names' lengths: named by patterns


def _exported(tmp_path, text: str):
    """(the process, its folder) of `astral export --netbox` of the design `text`, whose
    keys resolve."""
    (tmp_path / "d.astral").write_text(text, encoding="utf-8")
    proc = _cli("export", "--netbox", str(tmp_path / "out"), str(tmp_path / "d.astral"))
    assert proc.returncode == 0, proc.stderr
    _keys_resolve(tmp_path / "out")
    return proc, tmp_path / "out"


def test_namesakes_are_exported_apart(tmp_path):
    # `Acme Inc` and `acme-inc` had one slug, so did `Node` and `NODE`: one manufacturer and one
    # type of each pair were left out and their devices named what the files did not hold;
    # `Node(n = N2)` (two ports a NIC) was one type with `Node`, the YAML of one of them; two
    # rows whose paths meet within a slug's 100 characters had one slug
    proc, out = _exported(tmp_path, NAMESAKES)
    assert _valid_device_types(out) == 3
    assert [(r["name"], r["slug"]) for r in _rows(out / "manufacturers.csv")] == [
        ("Acme Inc", "acme-inc"), ("acme-inc", "acme-inc-2")]
    assert [(r["manufacturer"], r["model"], r["slug"]) for r in
            _rows(out / "device_types.csv")] == [("acme-inc", "NODE", "acme-inc-2-node"),
                                                 ("Acme Inc", "Node", "acme-inc-node"),
                                                 ("Acme Inc", "Node (2)", "acme-inc-node-2")]
    slugs = [r["slug"] for r in _rows(out / "locations.csv")]
    assert len(slugs) == 2 and slugs[1] == slugs[0][:98] + "-2"
    assert {len(x) for x in slugs} == {100}         # NetBox's slug is at most 100 characters
    ports = {r["device_type"] for r in _rows(out / "devices.csv")
             if r["description"].endswith("hosts[1]")}
    assert ports == {"Node (2)"}
    assert "device type Node of Acme Inc is exported as Node (2)" in proc.stdout


def _vendors(*names: str) -> str:
    """A design of one rack of hosts A, B, ..., each of a vendor of `names`."""
    hosts = [chr(ord("A") + i) for i in range(len(names))]
    return ("gpu G { power = 700 W }\n" + "".join(
        f'host {h} {{ gpus = 2 x G, power = 3 kW, vendor = "{n}" }}\n'
        for h, n in zip(hosts, names))
        + f"rack R {{ hosts = [{', '.join(hosts)}], power_limit = 45 kW }}\n"
          "site S { racks = 1 x R }\n")


CASES = _vendors("NVIDIA", "Nvidia", " nvidia ", "Acme")


def test_a_manufacturer_is_one_whatever_the_case_of_its_name(tmp_path):
    # "NVIDIA" and "Nvidia" were two manufacturers (slugs nvidia and nvidia-2), which NetBox
    # holds as one company: one, named as the design first writes it, its types under it
    proc, out = _exported(tmp_path, CASES)
    assert [(r["name"], r["slug"]) for r in _rows(out / "manufacturers.csv")] == [
        ("Acme", "acme"), ("NVIDIA", "nvidia")]
    assert sorted((r["manufacturer"], r["model"], r["slug"])
                  for r in _rows(out / "device_types.csv")) == [
        ("Acme", "D", "acme-d"), ("NVIDIA", "A", "nvidia-a"), ("NVIDIA", "B", "nvidia-b"),
        ("NVIDIA", "C", "nvidia-c")]
    assert {r["manufacturer"] for r in _rows(out / "devices.csv")} == {"Acme", "NVIDIA"}
    assert sorted(p.name for p in (out / "device-types").iterdir()) == ["acme", "nvidia"]
    assert "manufacturer ` nvidia `, `Nvidia` is exported as `NVIDIA`" in proc.stdout


FORMS = _vendors("Soci\u00e9t\u00e9", "Socie\u0301te\u0301",
                 "\uff2e\uff36\uff29\uff24\uff29\uff21", "NVIDIA", "   ")


def test_a_manufacturer_is_one_whatever_the_unicode_form_of_its_name(tmp_path):
    """`Société` composed and decomposed (NFC, NFD) and a full-width `ＮＶＩＤＩＡ` were
    manufacturers of their own (two `Société` that look alike, slugs `soci-t`, `socie-te` and
    `x`), and a vendor of spaces a manufacturer named `   ` (NetBox refuses a blank name):
    one manufacturer per name in its compatibility form, slugs as NetBox's slugify makes
    them (ASCII letters), and no vendor for the blank one."""
    proc, out = _exported(tmp_path, FORMS)
    wide = "\uff2e\uff36\uff29\uff24\uff29\uff21"       # as the design first writes it
    assert [(r["name"], r["slug"]) for r in _rows(out / "manufacturers.csv")] == [
        ("Soci\u00e9t\u00e9", "societe"), ("Unspecified", "unspecified"), (wide, "nvidia")]
    assert sorted((r["manufacturer"], r["model"], r["slug"])
                  for r in _rows(out / "device_types.csv")) == [
        ("Soci\u00e9t\u00e9", "A", "societe-a"), ("Soci\u00e9t\u00e9", "B", "societe-b"),
        ("Unspecified", "E", "unspecified-e"), (wide, "C", "nvidia-c"), (wide, "D", "nvidia-d")]
    assert "manufacturer `NVIDIA` is exported as" in proc.stdout


def test_the_columns_checked_are_netbox_4_7_3s(tmp_path):
    """racks.csv's list took `starting_unit`, which NetBox 4.7.3's RackImportForm does not
    (tests/fixtures/netbox/README.md): a header with it passed; a power feed's `status`, `type`,
    `supply` and `phase`, which its form requires, were not asked for."""
    accepted, _ = NETBOX["racks.csv"]
    assert "starting_unit" not in accepted and {"id", "owner", "group"} <= accepted
    assert {"status", "type", "supply", "phase"} <= NETBOX["power_feeds.csv"][1]
