"""`astral export --netbox` refuses two devices of one site whose names NetBox holds as one
(E706, outputs/netbox_names.py): NetBox 4.7.3 keeps a device's name unique per site and tenant
whatever its case (dcim/models/devices.py: `UniqueConstraint(Lower('name'), 'site', 'tenant')`),
so `gpu-A` and `GPU-a` in one site passed E236 (which compares names as written) and the
import refused the second."""
from __future__ import annotations

import csv
from pathlib import Path

from clirun import astral


def _design(sites: int = 1, other: str = "GPU-{rack}-{host}") -> str:
    return ("gpu G { power = 700 W }\n"
            'host H { gpus = 2 x G, power = 3 kW, name = "gpu-{rack}-{host}" }\n'
            f'host K {{ gpus = 2 x G, power = 3 kW, name = "{other}" }}\n'
            "rack R { hosts = 1 x H, spare = 1 x K, power_limit = 45 kW }\n"
            + "".join(f"site S{i} {{ racks = 2 x R }}\n" for i in range(sites)))


def _export(folder: Path, text: str, *more: str):
    (folder / "d.astral").write_text(text, encoding="utf-8")
    return astral("export", "--netbox", str(folder / "out"), str(folder / "d.astral"), *more,
                  "--color", "never", cwd=folder)


def test_two_names_of_one_site_that_differ_in_case_only_are_e706_at_the_pattern(tmp_path):
    # (E236 says nothing: the names differ as written)
    proc = _export(tmp_path, _design())
    assert proc.returncode == 1, proc.stdout
    said = [line for line in proc.stderr.splitlines() if line.startswith(("error", "warning["))
            and "W6" not in line and "W216" not in line]
    assert said == [
        "error[E706]: `GPU-0-0` (S0.racks[0].spare[0]) and `gpu-0-0` (S0.racks[0].hosts[0]) "
        "are one device name to NetBox in site S0; 1 more like it: NetBox keeps a device's name "
        "unique per site and tenant whatever its case (dcim.Device: UniqueConstraint(Lower"
        "('name'), 'site', 'tenant')), and its import would refuse the second"]
    assert "d.astral:3:45" in proc.stderr                 # K's `name` pattern
    assert "hint: tell their names apart by more than case" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_one_name_in_two_sites_is_written(tmp_path):
    """The scope is the site (the export writes no tenant): an inventory that gives a device
    of each site one name is taken (patterns that did are E236 only where an inventory binds
    its rows by name)."""
    (tmp_path / "fleet.csv").write_text(
        "name,path\nnode-1,S0.racks[0].hosts[0]\nNODE-1,S1.racks[0].hosts[0]\n",
        encoding="utf-8")
    proc = _export(tmp_path, _design(2, other="spare-{site}-{rack}-{host}").replace(
        "gpu-{rack}", "gpu-{site}-{rack}")
                   + 'inventory Fleet {\n  file = "fleet.csv"\n  columns { path = "path" }\n}\n')
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out" / "devices.csv", encoding="utf-8") as f:
        names = [(d["site"], d["name"]) for d in csv.DictReader(f)]
    assert ("S0", "node-1") in names and ("S1", "NODE-1") in names


def test_names_an_inventory_gives_are_said_at_its_row(tmp_path):
    """An inventory keyed by path gives the names it holds, alike or not: the check is of the
    names the export writes, not the patterns' (E236's)."""
    (tmp_path / "fleet.csv").write_text(
        "name,path\nnode-1,S0.racks[0].hosts[0]\nNODE-1,S0.racks[1].hosts[0]\n",
        encoding="utf-8")
    proc = _export(tmp_path, _design(other="spare-{rack}-{host}")
                   + 'inventory Fleet {\n  file = "fleet.csv"\n  columns { path = "path" }\n}\n')
    assert proc.returncode == 1
    assert "error[E706]: `NODE-1` (S0.racks[1].hosts[0]) and `node-1` (S0.racks[0].hosts[0]) " \
           "are one device name to NetBox in site S0: " in proc.stderr
    assert "fleet.csv:3:1" in proc.stderr
    assert "hint: the inventory's row names it" in proc.stderr


def test_names_a_json_inventory_gives_are_said_at_its_item(tmp_path):
    """A JSON inventory's items have no line: E706 for the second of two names alike was said
    nowhere; it is said in the inventory's file at its item."""
    import json

    (tmp_path / "fleet.json").write_text(json.dumps(
        [{"name": "node-1", "path": "S0.racks[0].hosts[0]"},
         {"name": "NODE-1", "path": "S0.racks[1].hosts[0]"}]), encoding="utf-8")
    proc = _export(tmp_path, _design(other="spare-{rack}-{host}")
                   + 'inventory Fleet {\n  file = "fleet.json"\n  columns { path = "path" }\n}\n',
                   "--format", "json")
    assert proc.returncode == 1
    (e,) = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "E706"]
    assert e["message"].startswith("`NODE-1` (S0.racks[1].hosts[0]) and `node-1`")
    assert e["range"] is None and e["file"].endswith("fleet.json"), e
    assert "item 2 of the list" in json.dumps(e), e


def test_docs_diagnostics_md_shows_what_e706_prints(tmp_path):
    from test_netbox_lengths import docs_show_what_export_prints

    docs_show_what_export_prints("E706", tmp_path, _design())


PANELS = """\
gpu G { power = 700 W }
host H { gpus = 2 x G, power = 3 kW, name = "gpu-{pod}-{row}-{host}" }
row W {
  hosts = 2 x H, name = "row{row}"
  feeder utility {
    current = ac, voltage = 400 V, phases = 3, side = A, capacity = 40 kW, serves = hosts
  }
}
pod P { rows = 2 x W }
site A { pods = 2 x P }
"""


def test_two_power_panels_of_a_site_named_alike_are_e707(tmp_path):
    """A part that declares feeders gets a power panel named after it (`row0 power`), and
    NetBox keeps a panel's name unique per site (dcim.PowerPanel: UniqueConstraint of site and
    name): the rows of each pod named `row{row}` wrote `row0 power` twice in site A, and
    NetBox's import refused the second. E708 at the rows' pattern, and nothing is written."""
    proc = _export(tmp_path, PANELS)
    assert proc.returncode == 1
    assert "error[E708]: the power panel `row0 power` of A.pods[1].rows[0] is the panel of " \
           "A.pods[0].rows[0] too, in site A; 1 more like it: NetBox keeps a power panel's " \
           "name unique per site (dcim.PowerPanel: UniqueConstraint of site and name), and " \
           "its import would refuse the second" in proc.stderr
    assert "d.astral:4:25" in proc.stderr
    assert "hint: a panel is named after the part that declares its feeders" in proc.stderr
    assert not (tmp_path / "out").exists()
    fine = tmp_path / "fine"
    fine.mkdir()
    assert _export(fine, PANELS.replace('"row{row}"', '"row{pod}-{row}"')).returncode == 0


def test_docs_diagnostics_md_shows_what_e707_prints(tmp_path):
    from test_netbox_lengths import docs_show_what_export_prints

    docs_show_what_export_prints("E708", tmp_path, PANELS)


def test_a_device_name_taken_again_in_another_site_is_cabled_in_its_site(tmp_path):
    """An inventory may give a device of each site one name (NetBox keeps a device's name unique
    per site), but cables.csv named a cable's ends by device name alone, and NetBox's import
    finds a cable's device by its name within `side_a_site` / `side_b_site` when given, else
    among every site's ("multiple objects were found": the cables of both were refused). Each
    end's site is written beside its device."""
    from test_netbox import DESIGN

    text = DESIGN[:DESIGN.index("inventory Fleet")].replace(
        '"gpu-{block}-{rack:03}-{host}"', '"gpu-{site}-{block}-{rack:03}-{host}"').replace(
        '"r{block}-{rack+1:02}"', '"r{site}-{block}-{rack+1:02}"').replace(
        '"leaf-{block}-{rail}"', '"leaf-{site}-{block}-{rail}"').replace(
        '"spine-{index:02}"', '"spine-{site}-{index:02}"') \
        + "site Other {\n  sus = 2 x SU\n  fabric = Compute\n}\n" \
        + 'inventory Fleet {\n  file = "fleet.csv"\n  columns { path = "path" }\n}\n'
    (tmp_path / "fleet.csv").write_text(
        "name,path\nnode-1,Cluster.sus[0].racks[0].hosts[0]\nnode-1,Other.sus[0].racks[0]."
        "hosts[0]\n", encoding="utf-8")
    proc = _export(tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out" / "cables.csv", encoding="utf-8", newline="") as f:
        cables = list(csv.DictReader(f))
    ends = {(c["side_a_site"], c["side_a_device"]) for c in cables
            if c["side_a_device"] == "node-1"}
    assert ends == {("Cluster", "node-1"), ("Other", "node-1")}
    assert all(c["side_a_site"] == c["side_b_site"] == c["description"].split(".", 1)[0]
               for c in cables)


def _free_by_search(names):
    """The slugs as the export gave them before stop 68: each searched from `-2` again."""
    out, taken = {}, set()
    from astral_dsl.outputs.netbox_names import slug
    for name in names:
        if name in out:
            continue
        base, n = slug(name), 1
        s = base
        while s in taken:
            n += 1
            s = f"{base[:100 - len(str(n)) - 1]}-{n}"
        taken.add(s)
        out[name] = s
    return out


def test_slugs_resume_each_base_where_it_stopped_and_give_what_a_search_from_2_gave():
    """netbox_names.slugs: locations whose paths share their first 100 characters slug alike;
    each base's count resumes where it stopped (N of them cost N checks, not N^2 / 2), which
    gives the slugs the search from `-2` gave, names that slug to `base-N` themselves among
    them, each unique and within NetBox's 100 characters."""
    from astral_dsl.outputs.netbox_names import slugs

    long = "site." + "hall" * 30
    names = [f"{long}.pod{i}" for i in range(400)] + ["a", "a-2", "A", "a", "a-3", "A!"] \
        + [f"{long}.rack{i}" for i in range(50)] + [long[:100] + "-7"]
    got = slugs(names)
    assert got == _free_by_search(names)
    assert len(set(got.values())) == len(got) and max(map(len, got.values())) <= 100
    assert [got[n] for n in ("a", "a-2", "A", "a-3", "A!")] == ["a", "a-2", "a-3", "a-3-2",
                                                                  "a-4"]
