"""The stdlib's climates shipped parsed (analyses/climate_table.py): the very doubles a parse
gives, served only for the very bytes they were parsed from."""
from __future__ import annotations

import hashlib
import json
from array import array
from pathlib import Path

import attrs
import pytest

from astral_dsl.analyses import climate as climates
from astral_dsl.analyses import climate_formats, climate_table

REPO = Path(__file__).resolve().parents[1]


def _bits(climate):
    return {f: array("d", getattr(climate, f)).tobytes() for f in climate_table.COLUMNS}


@pytest.mark.parametrize("path", climate_table.files(), ids=lambda p: p.name)
def test_the_shipped_hours_are_a_parse_double_for_double(path):
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    name = f"stdlib/climate/{path.name}"
    shipped = climate_table.lookup(digest, name)
    assert shipped is not None, f"{name} is not shipped: python -m " \
                                f"astral_dsl.analyses.climate_table --write"
    parsed = climates.with_wet_bulbs(climate_formats.parse(data, name))
    assert _bits(shipped) == _bits(parsed)
    assert attrs.evolve(shipped, digest="") == parsed and shipped.digest == digest


def test_the_shipped_file_is_a_regeneration():
    """The shipped entries are those a parse of stdlib/climate gives now (regenerate with
    `python -m astral_dsl.analyses.climate_table --write`), and every file there is shipped."""
    shipped = json.loads(climate_table.PATH.read_text(encoding="utf-8"))
    assert climate_table.generate() == shipped
    assert len(shipped["climates"]) == len(climate_table.files()) >= 1


def test_load_reads_the_shipped_hours_without_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(climates, "_parsed", {})
    monkeypatch.setattr(climates, "parse", lambda *a: pytest.fail("parsed"))
    c = climates.load("stdlib/climate/723170TYA.CSV", REPO)
    assert c.hours == 8760 and c.name == "stdlib/climate/723170TYA.CSV"
    assert not list((tmp_path / "cache").glob("climate-*"))


def test_another_file_or_a_stale_entry_is_parsed(tmp_path, monkeypatch):
    """A file that differs by a byte from a stdlib one (a blank line at its end: the same hours)
    has no entry and is parsed; so is a stdlib file when the parser's version or the wet-bulb
    table is not the one its entry was made with."""
    data = (REPO / "stdlib" / "climate" / "723170TYA.CSV").read_bytes()
    (tmp_path / "mine.csv").write_bytes(data + b"\n")
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(climates, "_parsed", {})
    mine = climates.load("mine.csv", tmp_path)
    assert climate_table.lookup(mine.digest, "mine.csv") is None
    assert list((tmp_path / "cache").glob("climate-*"))         # parsed, and cached per user
    digest = hashlib.sha256(data).hexdigest()
    shipped = climate_table.lookup(digest, "mine.csv")
    assert _bits(mine) == _bits(shipped) and mine.stamps == shipped.stamps
    monkeypatch.setattr(climates, "VERSION", "climate 999")
    assert climate_table.lookup(digest, "x") is None
