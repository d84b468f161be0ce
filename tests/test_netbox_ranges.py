"""The numbers NetBox 4.7.3 bounds (outputs/netbox_ranges.py): a rack's height whole, from 1
to 100 U; a device type's height in steps of 0.5 U below 1,000 U: E709 at the declaration, and
nothing is written. A feed's voltage is a whole number of volts up to 32,767 (a
SmallIntegerField), its amperage from 1 to 32,767 A: a feed past them is left out of
power_feeds.csv with W709 (E709 refused the whole export for a 34.5 kV feeder), a fractional
voltage written rounded (`231` for 230.5 V) and an amperage under 1 A as 1 A (written without a
word before), each with W709. A 0 U host is written without a position, as NetBox mounts one
(Device.clean() refuses a position for it)."""
from __future__ import annotations

import json

from netbox_export import export as _export, rows as _rows


def _e709(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error[E709]")]


def _design(host="units = 2 U", rack="units = 42 U", feeder="voltage = 400 V"):
    return (f"host H {{ power = 1 kW, {host} }}\n"
            f"rack R {{ hosts = 2 x H, width = 19 inch, {rack} }}\n"
            "site S {\n"
            "  racks = 3 x R\n"
            f"  feeder f {{ current = ac, {feeder}, phases = 3, power_factor = 95 %,\n"
            "             capacity = 100 kW, max_utilization = 80 %, serves = racks }\n"
            "}\n")


def _w709(stderr):
    return [line for line in stderr.splitlines() if line.startswith("warning[W709]")]


def test_a_voltage_netbox_cannot_hold_leaves_the_feed_out_with_w709(tmp_path):
    """A 34.5 kV utility feed is a real design: its feed is left out of power_feeds.csv (no
    NetBox object refers to a feed), with W709 at the voltage; everything else is written (E709
    refused the whole export)."""
    proc, out = _export(tmp_path, _design(feeder="voltage = 34.5 kV").replace(
        "}\n}", "}\n  feeder g { current = ac, voltage = 415 V, phases = 3, capacity = 10 kW,\n"
                 "             max_utilization = 80 %, serves = racks }\n}"))
    assert proc.returncode == 0, proc.stderr
    assert _w709(proc.stderr) == [
        "warning[W709]: feeder `S.f` runs at 34,500 V: not written to power_feeds.csv, as "
        "NetBox cannot hold it: a feed's voltage is a whole number of volts from 1 to 32,767 "
        "(dcim.PowerFeed.voltage, a SmallIntegerField), and its import would refuse the feed"]
    assert "d.astral:5:38" in proc.stderr            # at the voltage
    assert "declare the feeder that serves the racks at the voltage its panel takes" in proc.stderr
    assert [(r["name"], r["voltage"]) for r in _rows(out / "power_feeds.csv")] == [("g", "415")]
    assert len(_rows(out / "racks.csv")) == 3 and len(_rows(out / "power_panels.csv")) == 1
    assert "note: power_feeds.csv: 1 feed(s) of feeder(s) S.f left out: NetBox cannot hold " \
           "their voltage or amperage (W709)" in proc.stdout


def test_a_fractional_voltage_is_written_in_whole_volts_with_w709(tmp_path):
    proc, out = _export(tmp_path, _design(feeder="voltage = 230.5 V, count = 2"))
    assert proc.returncode == 0, proc.stderr
    assert _w709(proc.stderr) == [
        "warning[W709]: feeder `S.f` runs at 230.5 V (1 more like it): NetBox takes a feed's "
        "voltage in whole volts (dcim.PowerFeed.voltage, a SmallIntegerField), and "
        "power_feeds.csv gives it 231 V"]
    assert "hint: declare the nominal voltage in whole volts, e.g. `voltage = 230 V`" \
        in proc.stderr
    assert [r["voltage"] for r in _rows(out / "power_feeds.csv")] == ["231", "231"]
    # 0.2305 kV is 230.5 V; 0.23 kV is 230 V, whole (written `230`), and nothing is said
    proc, out = _export(tmp_path, _design(feeder="voltage = 0.23 kV"))
    assert proc.returncode == 0, proc.stderr
    assert _rows(out / "power_feeds.csv")[0]["voltage"] == "230" and "W709" not in proc.stderr
    # 0.3 V is 0 in whole volts, which NetBox refuses (ExclusionValidator([0])): left out
    # (its 100 kW at 0.3 V, 202,579 A, is past NetBox's amperage too: said after)
    proc, out = _export(tmp_path, _design(feeder="voltage = 0.3 V"))
    assert proc.returncode == 0, proc.stderr
    assert _w709(proc.stderr)[:1] == [
        "warning[W709]: feeder `S.f` runs at 0.3 V: not written to power_feeds.csv, as NetBox "
        "cannot hold it: a feed's voltage is a whole number of volts from 1 to 32,767 "
        "(dcim.PowerFeed.voltage, a SmallIntegerField), and its import would refuse the feed"]
    assert "hint: declare the nominal voltage in whole volts, e.g. `voltage = 48 V`" \
        in proc.stderr
    assert _rows(out / "power_feeds.csv") == []


def test_an_amperage_above_32767_leaves_the_feed_out_with_w709(tmp_path):
    proc, out = _export(tmp_path, """\
        host H { power = 1 kW, units = 2 U }
        rack R { hosts = 2 x H, width = 19 inch, units = 42 U }
        site S {
          racks = 2 x R
          feeder f { current = dc, voltage = 800 V, ampacity = 20000 A, conductors = 2,
                     count = 2, max_utilization = 80 %, serves = racks }
          feeder g { current = dc, voltage = 800 V, ampacity = 16383 A, conductors = 2,
                     max_utilization = 80 %, serves = racks }
        }
        """)
    assert proc.returncode == 0, proc.stderr
    # f: 2 x 20,000 A, twice (count = 2), left out; g: 32,766 A, within NetBox's range
    assert _w709(proc.stderr) == [
        "warning[W709]: feeder `S.f` is rated 40,000 A (1 more like it): not written to "
        "power_feeds.csv, as NetBox cannot hold it: a feed's amperage is at most 32,767 A "
        "(dcim.PowerFeed.amperage, a PositiveSmallIntegerField), and its import would refuse "
        "the feed"]
    assert "d.astral:5:56" in proc.stderr            # at the ampacity
    assert [(r["name"], r["amperage"]) for r in _rows(out / "power_feeds.csv")] == \
        [("g", "32766")]
    assert "note: power_feeds.csv: 2 feed(s) of feeder(s) S.f left out" in proc.stdout


def test_an_amperage_under_1_a_is_written_1_a_with_w709(tmp_path):
    """NetBox's PowerFeed.amperage has MinValueValidator(1): a 0.5 A feed was written 1 A
    without a word."""
    proc, out = _export(tmp_path, """\
        host H { power = 10 W, units = 2 U }
        rack R { hosts = 2 x H, width = 19 inch, units = 42 U }
        site S {
          racks = 1 x R
          feeder f { current = dc, voltage = 48 V, ampacity = 0.5 A, max_utilization = 80 %,
                     serves = racks }
        }
        """)
    assert proc.returncode == 0, proc.stderr
    assert _w709(proc.stderr) == [
        "warning[W709]: feeder `S.f` is rated under 1 A: NetBox takes a feed's amperage from "
        "1 A (dcim.PowerFeed.amperage, MinValueValidator(1)), and power_feeds.csv gives it 1 A"]
    assert [r["amperage"] for r in _rows(out / "power_feeds.csv")] == ["1"]


def test_a_rack_height_netbox_refuses_is_e709(tmp_path):
    for units, said in (("42.5 U", "is 42.5 U tall"), ("120 U", "is 120 U tall"),
                        ("2 m", "is 44.9944 U tall")):
        proc, out = _export(tmp_path, _design(rack=f"units = {units}"))
        assert proc.returncode == 1, units
        assert _e709(proc.stderr) == [
            f"error[E709]: rack `R` {said} (2 more like it): NetBox takes a rack's height as a "
            "whole number of units from 1 to 100 (dcim.Rack.u_height), and its import would "
            "refuse the rack"]
        assert "d.astral:2:50" in proc.stderr and not out.exists()
    # a rack without `units` is as tall as its hosts reach: past 100 U, NetBox refuses it
    proc, out = _export(tmp_path, _design(host="units = 60 U", rack="power_limit = 10 kW"))
    assert proc.returncode == 1
    assert _e709(proc.stderr)[0].startswith(
        "error[E709]: rack `R` declares no `units`, and the hosts it holds reach 120 U "
        "(2 more like it): ")
    assert "d.astral:2:1" in proc.stderr and "W707" not in proc.stderr


def test_a_device_type_height_netbox_refuses_is_e709(tmp_path):
    for units in ("0.25 U", "1000 U"):
        proc, out = _export(tmp_path, _design(host=f"units = {units}", rack="power_limit = "
                                                                             "10 kW"))
        assert proc.returncode == 1, units
        # (two 1000 U hosts also make their rack 2000 U tall: E709 for the rack too)
        assert _e709(proc.stderr)[0] == (
            f"error[E709]: host `H` is {units} tall: NetBox takes a device type's height in "
            "steps of 0.5 U below 1,000 U (dcim.DeviceType.u_height: 4 digits, 1 after the "
            "point; DeviceType.clean() refuses another step), and its import would refuse the "
            "device type"), units
        assert "d.astral:1:32" in proc.stderr and not out.exists()


def test_numbers_within_netbox_s_bounds_are_written_as_before(tmp_path):
    proc, out = _export(tmp_path, _design(host="units = 1.5 U", rack="units = 100 U",
                                          feeder="voltage = 32767 V"))
    assert proc.returncode == 0, proc.stderr
    assert [r["u_height"] for r in _rows(out / "racks.csv")] == ["100"] * 3
    assert [t["u_height"] for t in _rows(out / "device_types.csv")] == ["1.5"]
    assert [d["position"] for d in _rows(out / "devices.csv")] == ["1", "2.5"] * 3
    assert _rows(out / "power_feeds.csv")[0]["voltage"] == "32767"


def test_a_zero_u_host_is_in_its_rack_without_a_position(tmp_path):
    """NetBox's Device.clean() refuses a rack position for a 0 U device type; the export wrote
    one (`1`, `1`: the hosts above took no units)."""
    proc, out = _export(tmp_path, _design(host="units = 0 U"))
    assert proc.returncode == 0, proc.stderr
    assert [t["u_height"] for t in _rows(out / "device_types.csv")] == ["0"]
    devices = _rows(out / "devices.csv")
    assert {(d["rack"], d["position"], d["face"]) for d in devices} == \
        {(f"S.racks[{i}]", "", "") for i in range(3)}
    assert "note: devices.csv: host(s) of device type(s) H are 0 U: in their racks without a " \
           "position, as NetBox mounts a 0 U device" in proc.stdout


def test_e709_in_the_json_envelope(tmp_path):
    proc, out = _export(tmp_path, _design(rack="units = 42.5 U"), "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["netbox"] is None and not out.exists()
    assert [d["code"] for d in doc["diagnostics"] if d["code"] == "E709"] == ["E709"]


def test_w709_in_the_json_envelope(tmp_path):
    proc, out = _export(tmp_path, _design(feeder="voltage = 34.5 kV"), "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and out.exists()
    assert [d["code"] for d in doc["diagnostics"] if d["code"][1:] == "709"] == ["W709"]
    assert any("left out" in n for n in doc["netbox"]["notes"])


def test_docs_diagnostics_md_shows_what_e709_prints(tmp_path):
    from test_netbox_lengths import docs_show_what_export_prints

    docs_show_what_export_prints(
        "E709", tmp_path, "host H { power = 1 kW, units = 2 U }\n"
                          "rack R { hosts = 4 x H, width = 19 inch, units = 42.5 U }\n"
                          "site S {\n  racks = 2 x R\n}\n")


def test_docs_diagnostics_md_shows_what_w709_prints(tmp_path):
    from test_netbox_lengths import docs_show_what_export_prints

    docs_show_what_export_prints(
        "W709", tmp_path, "host H { power = 1 kW, units = 2 U }\n"
                          "rack R { hosts = 4 x H, width = 19 inch, units = 42 U }\n"
                          "site S {\n  racks = 2 x R\n"
                          "  feeder mv { current = ac, voltage = 34.5 kV, capacity = 2 MW,\n"
                          "              max_utilization = 80 %, serves = racks }\n}\n")


def test_a_fractional_rating_or_share_is_written_rounded_down_and_said(tmp_path):
    """NetBox holds a feed's amperage and max_utilization as whole numbers: they had been
    rounded down without a word. A declared `ampacity` of 62.5 A is written 62 A and a declared
    `max_utilization` of 80.5 % is written 80 %, each with W709 at its field (rounded down: a
    rating and a share are limits); an amperage derived from a `capacity` at its voltage (100
    kW at 400 V three-phase, power factor 0.95: 100,000 / (sqrt(3) x 400 x 0.95) = 151.93 A) is
    written 151 A, which the export's note says (the user wrote no amperage to correct)."""
    proc, out = _export(tmp_path, _design(feeder="voltage = 400 V").replace(
        "max_utilization = 80 %", "max_utilization = 80.5 %").replace(
        "}\n}", "}\n  feeder g { current = dc, voltage = 48 V, ampacity = 62.5 A,\n"
                 "             max_utilization = 90 %, serves = racks }\n}"))
    assert proc.returncode == 0, proc.stderr
    assert _w709(proc.stderr) == [
        "warning[W709]: feeder `S.f` may carry 80.50 % of its rating: NetBox takes a feed's "
        "max_utilization in whole percent (dcim.PowerFeed.max_utilization, a "
        "PositiveSmallIntegerField), and power_feeds.csv gives it 80 %, rounded down (a limit)",
        "warning[W709]: feeder `S.g` is rated 62.50 A: NetBox takes a feed's amperage in whole "
        "amperes (dcim.PowerFeed.amperage, a PositiveSmallIntegerField), and power_feeds.csv "
        "gives it 62 A, rounded down (a rating is a limit the feed must not pass)"]
    assert "d.astral:6:51" in proc.stderr and "d.astral:7:55" in proc.stderr   # at the fields
    assert [(r["name"], r["amperage"], r["max_utilization"])
            for r in _rows(out / "power_feeds.csv")] == [("f", "151", "80"), ("g", "62", "90")]
    assert "note: power_feeds.csv: amperages derived from a feeder's capacity at its voltage " \
           "(or its cable's ampacity) are written rounded down to whole amperes, as NetBox " \
           "holds them: S.f 151.93 -> 151 A" in proc.stdout
