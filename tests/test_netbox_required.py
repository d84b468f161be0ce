"""The numbers NetBox 4.7.3's bulk import requires (tests/fixtures/netbox/README.md): a rack's
`width` and `u_height` (RackImportForm.clean), a device type's `u_height`, a power feed's
`voltage`, `amperage` and `max_utilization` (model fields that are not blank). `astral export
--netbox` writes each from the design, derives it where the physics says so, or writes NetBox's
own default (19 inches: the EIA-310-E rack) with W707 at the declaration; a width NetBox has no
choice for is E707 and nothing is written (outputs/netbox_required.py)."""
from __future__ import annotations

import json

from clirun import astral
from netbox_export import export as _export, rows as _rows


UNSTATED = """\
    host H { power = 1 kW, units = 30 U }
    switch Sw { power = 1 kW }
    rack R { hosts = 2 x H }
    site S {
      racks = 2 x R
      feeder f { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %,
                 capacity = 100 kW, serves = racks }
      feeder g { current = dc, voltage = 240 V, serves = racks }
    }
    """


def test_what_the_design_does_not_state_is_written_with_w707(tmp_path):
    proc, out = _export(tmp_path, UNSTATED)
    assert proc.returncode == 0, proc.stderr
    racks = _rows(out / "racks.csv")
    # 19 inches (EIA-310-E); two 30 U hosts reach 60 U, above NetBox's default of 42
    assert {(r["width"], r["u_height"]) for r in racks} == {("19", "60")}
    assert [t["u_height"] for t in _rows(out / "device_types.csv")] == ["30"]
    feeds = {f["name"]: f for f in _rows(out / "power_feeds.csv")}
    # 100 kW / (sqrt(3) x 400 V x 0.95) = 151.9 A, rounded down (NetBox takes whole amperes)
    assert (feeds["f"]["amperage"], feeds["f"]["max_utilization"]) == ("151", "80")
    assert (feeds["g"]["voltage"], feeds["g"]["amperage"]) == ("240", "15")    # NetBox's 15 A
    said = [line for line in proc.stderr.splitlines() if line.startswith("warning[W707]")]
    assert len(said) == 5, said       # R's width and units; g's amperage; f's and g's utilization
    assert any("rack `R` declares no `width`" in s and "19 inches" in s for s in said)
    assert any("rack `R` declares no `units`" in s and "60 U" in s for s in said)
    assert any("feeder `S.g` declares no `ampacity`" in s for s in said)
    assert "= hint: declare the rack's mounting width, e.g. `width = 19 inch`" in proc.stderr
    assert " --> " in proc.stderr and "d.astral:3:1" in proc.stderr     # at the rack


def test_w707_in_the_json_envelope(tmp_path):
    proc, _ = _export(tmp_path, UNSTATED, "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert sum(d["code"] == "W707" for d in doc["diagnostics"]) == 5


def test_what_the_design_states_is_written_and_nothing_assumed(tmp_path):
    proc, out = _export(tmp_path, """\
        host H { power = 1 kW, units = 2 U }
        rack R { hosts = 2 x H, width = 21 inch, units = 48 U }
        site S {
          racks = 2 x R
          feeder f { current = dc, voltage = 240 V, ampacity = 312.5 A, conductors = 2,
                     max_utilization = 82.5 %, serves = racks }
        }
        """)
    assert proc.returncode == 0, proc.stderr
    assert "W707" not in proc.stderr
    assert {(r["width"], r["u_height"]) for r in _rows(out / "racks.csv")} == {("21", "48")}
    assert [t["u_height"] for t in _rows(out / "device_types.csv")] == ["2"]
    feed = _rows(out / "power_feeds.csv")[0]
    # 2 x 312.5 A; NetBox takes whole percent: 82.5 % rounded down
    assert (feed["voltage"], feed["amperage"], feed["max_utilization"]) == ("240", "625", "82")


def test_a_max_utilization_below_one_percent_is_e309(tmp_path):
    src = tmp_path / "d.astral"
    src.write_text("host H { power = 1 kW, units = 2 U }\n"
                   "site S { hosts = 2 x H\n"
                   "  feeder f { current = dc, voltage = 240 V, max_utilization = 0.5 %,\n"
                   "             serves = hosts } }\n", encoding="utf-8")
    proc = astral("check", str(src))
    assert proc.returncode == 1
    assert "error[E309]: `max_utilization` must be at least" in proc.stdout     # (human)
    assert "d.astral:3:63" in proc.stdout and "from 1 % to 100 %" in proc.stdout


def test_a_width_netbox_has_no_choice_for_is_e707(tmp_path):
    proc, out = _export(tmp_path, """\
        host H { power = 1 kW, units = 2 U }
        rack R { hosts = 2 x H, width = 600 mm, units = 48 U }
        site S { racks = 2 x R }
        """)
    assert proc.returncode == 1
    assert "error[E707]: rack `R` is 23.622 inches wide" in proc.stderr
    assert "d.astral:2:33" in proc.stderr
    assert not out.exists()


def test_docs_diagnostics_md_shows_what_w707_and_e707_print(tmp_path):
    from test_netbox_lengths import docs_show_what_export_prints

    one = "host H { power = 1 kW, units = 2 U }\nrack R { hosts = 4 x H, units = 42 U%s }\n" \
          "site S { racks = 2 x R }\n"
    docs_show_what_export_prints("W707", tmp_path, one % "")
    docs_show_what_export_prints("E707", tmp_path, one % ", width = 600 mm")


def test_a_stdlib_rack_is_warned_at_the_users_line_with_a_part_of_their_own(tmp_path):
    proc, out = _export(tmp_path, "import stdlib.hardware { NVL72 }\n"
                                  "site S { racks = 1 x NVL72 }\n")
    assert proc.returncode == 0, proc.stderr
    # the stdlib states the NVL72's 48 U (assumed, W216 at check) but not its width
    assert {(r["width"], r["u_height"]) for r in _rows(out / "racks.csv")} == {("19", "48")}
    assert "warning[W707]: rack `NVL72` declares no `width`" in proc.stderr
    assert "d.astral:2:22" in proc.stderr
    assert "on a rack of your own, `rack MyNVL72 = NVL72 { width = ... }`" in proc.stderr
    proc, out = _export(tmp_path, "import stdlib.hardware { NVL72 }\n"
                                  "rack R = NVL72 { width = 19 inch }\n"
                                  "site S { racks = 1 x R }\n")
    assert proc.returncode == 0 and "W707" not in proc.stderr


def test_a_feeds_phase_is_the_one_the_analyses_take(tmp_path):
    """An AC feeder without `phases` is three-phase to the analyses (analyses/conductors.py, W621
    at check), so the export writes it so (it wrote single-phase); a declared `phases = 1` stays
    single-phase, and a DC feed is single-phase, NetBox's default."""
    proc, out = _export(tmp_path, """\
        host H { power = 1 kW, units = 1 U }
        rack R { hosts = 2 x H, width = 19 inch, units = 42 U }
        site S {
          racks = 2 x R
          feeder a { current = ac, voltage = 400 V, power_factor = 95 %, capacity = 10 kW,
                     serves = racks }
          feeder b { current = ac, voltage = 230 V, phases = 1, power_factor = 95 %,
                     capacity = 10 kW, serves = racks }
          feeder d { current = dc, voltage = 240 V, capacity = 10 kW, serves = racks }
        }
        """)
    assert proc.returncode == 0, proc.stderr
    phase = {f["name"]: f["phase"] for f in _rows(out / "power_feeds.csv")}
    assert phase == {"a": "three-phase", "b": "single-phase", "d": "single-phase"}
