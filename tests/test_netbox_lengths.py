"""`astral export --netbox` refuses a value longer than the NetBox field it fills (E705,
outputs/netbox_lengths.py), and writes nothing: a host named by its path past a device name's
64 characters, a cable's description past 200, a serial past 50 went into files NetBox's import
refuses row by row ("Ensure this value has at most 64 characters"), after the rows before."""
from __future__ import annotations

import csv
import json

from clirun import astral
from test_netbox import DESIGN, _fleet, _hosts


def _one_rack(member: str) -> str:
    """A design whose host is named by its path, `S.MEMBER[0].hosts[0]`: len(MEMBER) + 14."""
    return ("gpu G { power = 700 W }\n"
            "host H { gpus = 2 x G, power = 3 kW }\n"
            "rack R { hosts = 1 x H, power_limit = 45 kW }\n"
            f"site S {{ {member} = 1 x R }}\n")


def _export(folder, text: str, *more: str):
    (folder / "d.astral").write_text(text, encoding="utf-8")
    return astral("export", "--netbox", str(folder / "out"), str(folder / "d.astral"), *more,
                  cwd=folder)


def test_a_device_name_of_64_characters_is_written_and_one_of_65_refused(tmp_path):
    proc = _export(tmp_path, _one_rack("m" * 50))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out" / "devices.csv", encoding="utf-8") as f:
        (device,) = csv.DictReader(f)
    assert len(device["name"]) == 64
    (tmp_path / "d.astral").unlink()
    longer = tmp_path / "longer"
    longer.mkdir()
    proc = _export(longer, _one_rack("m" * 51))
    assert proc.returncode == 1
    name = f"S.{'m' * 51}[0].hosts[0]"
    assert f"error[E705]: `{name}` (65 characters) is longer than the 64 characters NetBox " \
           f"takes for a device's name (dcim.Device.name)" in proc.stderr
    assert "d.astral:2:1" in proc.stderr                  # the host's declaration
    assert "hint: name it by a pattern" in proc.stderr
    assert f"nothing written to `{longer / 'out'}`" in proc.stderr
    assert not (longer / "out").exists()
    doc = json.loads(_export(longer, _one_rack("m" * 51), "--format", "json").stdout)
    assert doc["valid"] is False and doc["netbox"] is None
    assert [(d["code"], d["range"]["start"]["line"]) for d in doc["diagnostics"]
            if d["code"] == "E705"] == [("E705", 2)]
    assert not (longer / "out").exists()


def test_a_cable_past_200_characters_and_a_serial_past_50_are_said_where_they_come_from(
        tmp_path):
    """The hosts and switches are named by patterns (short), but a cable's description is its
    two ends' paths, here past 200 characters for every host port: one E705 for all of them,
    at the host; a serial of 51 characters, at its inventory row."""
    member = "scalable_units_of_the_first_hall_" * 4
    (tmp_path / "fleet.csv").write_text(_fleet(
        [(n, "S" * 51 if i == 3 else s, t) for i, (n, s, t) in enumerate(_hosts())]),
        encoding="utf-8")
    proc = _export(tmp_path, DESIGN.replace("sus = 2 x SU", f"{member} = 2 x SU").replace(
        "block SU { racks = 2 x GpuRack }", 'block SU { racks = 2 x GpuRack, name = "su{block}" }'))
    assert proc.returncode == 1
    said = [line for line in proc.stderr.splitlines() if line.startswith("error[E705]")]
    assert len(said) == 2, proc.stderr
    serial, cable = said
    host = f"Cluster.{member}[0].racks[0].hosts[3]"
    assert serial == f"error[E705]: {host}: `{'S' * 51}` (51 characters) is longer than the 50 " \
                     f"characters NetBox takes for a device's serial (dcim.Device.serial): its " \
                     f"import would refuse the row"
    assert "fleet.csv:5:1" in proc.stderr                 # the fourth host's row
    # the first cable (217 characters: its host port's path and the leaf's), and the 127 host
    # ports' after it, at the host's declaration (the uplinks' descriptions are short)
    assert cable.startswith("error[E705]: `Cluster.scalable_units_of_the_first_hall_scalabl")
    assert cable.endswith("k[0].rail[0].leaf[0]` (217 characters; 127 more like it) is longer "
                          "than the 200 characters NetBox takes for a description (the model "
                          "path; every exported model's `description`): its import would "
                          "refuse the row")
    assert "d.astral:5:1" in proc.stderr and "hint: a cable's description names its two " \
                                             "ends' paths" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_docs_diagnostics_md_shows_what_e705_prints(tmp_path):
    docs_show_what_export_prints("E705", tmp_path, _one_rack("m" * 51))


def docs_show_what_export_prints(code: str, folder, design: str) -> None:
    """docs/diagnostics.md's console block under `### CODE` is what `astral export d.astral
    --netbox out` prints of `design`, from its first line shown."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "diagnostics.md").read_text(
        encoding="utf-8")
    section = text[text.index(f"### {code}"):]
    block = section[section.index("```console\n") + len("```console\n"):]
    command, *shown = block[:block.index("```")].rstrip("\n").split("\n")
    assert command == "$ astral export d.astral --netbox out"
    (folder / "d.astral").write_text(design, encoding="utf-8")
    proc = astral("export", "d.astral", "--netbox", "out", "--color", "never", cwd=folder)
    lines = proc.stderr.rstrip("\n").split("\n")
    assert lines[lines.index(shown[0]):] == shown


def test_a_name_an_inventory_gives_is_said_at_its_row(tmp_path):
    (tmp_path / "fleet.csv").write_text(f"name,path\n{'n' * 65},S.m[0].hosts[0]\n",
                                        encoding="utf-8")
    proc = _export(tmp_path, _one_rack("m") + 'inventory Fleet {\n  file = "fleet.csv"\n'
                                              '  columns { path = "path" }\n}\n')
    assert proc.returncode == 1
    assert f"error[E705]: S.m[0].hosts[0]: `{'n' * 65}` (65 characters) is longer than the 64 " \
           f"characters NetBox takes for a device's name" in proc.stderr
    assert "fleet.csv:2:1" in proc.stderr
    assert "hint: the inventory's row names it: NetBox takes at most 64 characters there" \
        in proc.stderr


def _patterned(pattern: str, hosts: int = 2, racks: int = 1) -> str:
    return ("gpu G { power = 700 W }\n"
            f'host H {{ gpus = 2 x G, power = 3 kW, name = "{pattern}" }}\n'
            f"rack R {{ hosts = {hosts} x H, power_limit = 45 kW }}\n"
            f"site S {{ racks = {racks} x R }}\n")


def test_a_name_a_pattern_makes_past_64_characters_is_e705_not_cut(tmp_path):
    """A pattern's name was cut to 64 characters in silence (analyses/inventory.py): two hosts
    that differ past the 64th went into devices.csv under one name."""
    pattern = "h" * 70 + "-{host}"
    proc = _export(tmp_path, _patterned(pattern))
    assert proc.returncode == 1, proc.stdout
    assert f"error[E705]: S.racks[0].hosts[0]: `{'h' * 70}-0` (72 characters; 1 more like " \
           f"it) is longer than the 64 characters NetBox takes for a device's name" \
        in proc.stderr
    assert "d.astral:2:45" in proc.stderr                 # its `name` pattern
    assert "hint: declare a shorter `name` pattern on it" in proc.stderr
    assert not (tmp_path / "out").exists()
    short = tmp_path / "short"
    short.mkdir()
    proc = _export(short, _patterned("h" * 62 + "-{host}"))
    assert proc.returncode == 0, proc.stderr
    with open(short / "out" / "devices.csv", encoding="utf-8") as f:
        assert [d["name"] for d in csv.DictReader(f)] == [f"{'h' * 62}-0", f"{'h' * 62}-1"]


def test_a_long_interface_name_is_said_at_the_pattern_of_the_nic_that_makes_it(tmp_path):
    """A host of two NICs, the first named `ib{nic}` (short), the second by a pattern past 64
    characters: E705 is said at the second's pattern (it was said at the first NIC's, the one
    pattern of the host that makes no long name)."""
    long = "frontend-ethernet-interface-of-the-host-with-a-name-past-64-chars-{nic}"
    text = ("gpu G { power = 700 W }\n"
            'nic N { ports = 1, port_speed = 400 Gb/s, name = "ib{nic}" }\n'
            f'nic E {{ ports = 1, port_speed = 100 Gb/s, name = "{long}" }}\n'
            'host H { gpus = 2 x G, nics = [2 x N, E], power = 3 kW, name = "gpu-{host}" }\n'
            "site S { hosts = 2 x H }\n")
    doc = json.loads(_export(tmp_path, text, "--format", "json").stdout)
    (e,) = [d for d in doc["diagnostics"] if d["code"] == "E705"]
    assert long.replace("{nic}", "2") in e["message"]
    assert (e["range"]["start"]["line"], e["range"]["start"]["column"]) == \
        (3, text.splitlines()[2].index('"') + 1)


def test_a_feed_name_too_long_is_said_at_its_feeder(tmp_path):
    """A feeder whose name is past a power feed's 100 characters: E705 at the feeder's
    declaration (it had no span, the file alone)."""
    feeder = "utility_feeder_from_the_substation_" * 3
    text = ("gpu G { power = 700 W }\n"
            'host H { gpus = 2 x G, power = 3 kW, name = "gpu-{host}" }\n'
            "site S {\n"
            "  hosts = 2 x H\n"
            f"  feeder {feeder} {{\n"
            "    current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = A\n"
            "    capacity = 800 kW, serves = hosts\n"
            "  }\n"
            "}\n")
    doc = json.loads(_export(tmp_path, text, "--format", "json").stdout)
    (e,) = [d for d in doc["diagnostics"] if d["code"] == "E705"]
    assert "a power feed's name" in e["message"]
    assert e["range"] is not None and e["range"]["start"]["line"] == 5


def test_a_serial_of_a_json_inventory_is_said_at_its_item_not_a_line_of_its_file(tmp_path):
    """A JSON inventory's rows are items of a list, not lines: E705 for the serial of its third
    item was said at line 3 of a file of one line (an empty excerpt), then nowhere; it is said in
    the inventory's file at its item, as the inventory's own diagnostics say one (W231)."""
    (tmp_path / "fleet.json").write_text(json.dumps(
        [{"name": "gpu-0", "serial": "A"}, {"name": "gpu-1", "serial": "B"},
         {"name": "gpu-2", "serial": "S" * 51}]), encoding="utf-8")
    text = ("gpu G { power = 700 W }\n"
            'host H { gpus = 2 x G, power = 3 kW, name = "gpu-{host}" }\n'
            "site S { hosts = 3 x H }\n"
            'inventory Fleet { file = "fleet.json" }\n')
    doc = json.loads(_export(tmp_path, text, "--format", "json").stdout)
    (e,) = [d for d in doc["diagnostics"] if d["code"] == "E705"]
    assert e["message"].startswith(f"S.hosts[2]: `{'S' * 51}` (51 characters)")
    assert e["range"] is None and e["file"].endswith("fleet.json"), e
    assert "item 3 of the list" in json.dumps(e), e
