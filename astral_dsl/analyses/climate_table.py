"""The stdlib's climate files, parsed and tabulated, shipped with the package: a first check of a
site on one of them (an empty user cache) reads their hours here instead of parsing the file
and computing 8,760 wet bulbs (about 0.1 s of CPU for stdlib/climate/723170TYA.CSV).

An entry is keyed by the SHA-256 of the file's bytes and carries the key of what made it (the
parser's version, climate.VERSION, and the wet-bulb table's digest): a file that differs by a
byte, another VERSION or another wet-bulb table finds no entry and is parsed as before. An entry
holds the very doubles `climate_formats.parse` and `climate.with_wet_bulbs` return
(little-endian, then the hours' stamps, compressed with zlib and base64-encoded), so a climate
read here is equal, double for double, to the one parsed: tests/test_climate_table.py checks
every entry against a parse, so a change to the parser's numbers fails there until the entries are regenerated. Every
hour of a shipped file lies inside the wet-bulb table, so no entry depends on CoolProp.

    python -m astral_dsl.analyses.climate_table           # compare the shipped data with a parse
    python -m astral_dsl.analyses.climate_table --write   # regenerate them (after a change to
                                                          # the parser, the wet-bulb table or a
                                                          # file of stdlib/climate)
"""
from __future__ import annotations

import base64
import json
import sys
import zlib
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Optional

PATH = Path(__file__).with_name("climate_table.json")
COLUMNS = ("dry_bulb", "dew_point", "pressure", "wet_bulb")


def key(digest: str) -> str:
    """What an entry for a file of this SHA-256 was made by."""
    from astral_dsl.analyses import climate, wetbulb_table

    return f"{climate.VERSION} {digest} {wetbulb_table.source()}"


@lru_cache(maxsize=1)
def _entries() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))["climates"]


def lookup(digest: str, name: str):
    """The climate of a file whose bytes have this SHA-256, as `name` names it, or None."""
    from astral_dsl.analyses.climate_formats import Climate

    entry = _entries().get(digest)
    if entry is None or entry["key"] != key(digest):
        return None
    payload = _payload(entry["data"])
    hours = entry["hours"]
    values = array("d")
    values.frombytes(payload[:8 * len(COLUMNS) * hours])
    if sys.byteorder != "little":                  # pragma: no cover - depends on the machine
        values.byteswap()
    stamps = tuple(payload[8 * len(COLUMNS) * hours:].decode("ascii").split(","))
    cols = {f: tuple(values[i * hours:(i + 1) * hours]) for i, f in enumerate(COLUMNS)}
    return Climate(name, entry["format"], entry["place"], entry["elevation_m"], stamps, **cols,
                   digest=digest)


def _payload(data: str) -> bytes:
    return zlib.decompress(base64.b64decode(data, validate=True))


def _encode(climate) -> bytes:
    values = array("d", [v for f in COLUMNS for v in getattr(climate, f)])
    if sys.byteorder != "little":                  # pragma: no cover - depends on the machine
        values.byteswap()
    return values.tobytes() + ",".join(climate.stamps).encode("ascii")


def files():
    """The climate files of the stdlib (every file of stdlib/climate but its README)."""
    from astral_dsl import resources

    folder = resources.stdlib_dir() / "climate"
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() != ".md")


def generate() -> dict:
    """The entries from a parse of every climate file of the stdlib. An entry's compressed bytes
    are kept from the shipped file when they hold the same payload (another zlib may compress
    the same bytes differently: the comparison is of the data)."""
    import hashlib

    from astral_dsl.analyses import climate, climate_formats, wetbulb_table

    try:
        shipped = _entries()
    except (OSError, ValueError, KeyError):
        shipped = {}
    entries = {}
    for path in files():
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        name = f"stdlib/climate/{path.name}"
        parsed = climate_formats.parse(data, name)
        if any(wetbulb_table.lookup(t, d, p) is None for t, d, p in
               zip(parsed.dry_bulb, parsed.dew_point, parsed.pressure)):
            raise SystemExit(f"{name}: hours outside the wet-bulb table (their wet bulbs would "
                             f"be CoolProp's, whatever its version): not shipped")
        payload = _encode(climate.with_wet_bulbs(parsed))
        old = shipped.get(digest, {}).get("data")
        blob = old if old is not None and _payload(old) == payload else \
            base64.b64encode(zlib.compress(payload, 9)).decode("ascii")
        entries[digest] = {"name": name, "key": key(digest), "format": parsed.format,
                           "place": parsed.place, "elevation_m": parsed.elevation_m,
                           "hours": parsed.hours, "data": blob}
    return {"source": "the stdlib's climate files as astral_dsl.analyses.climate parses them, "
                      "with their wet bulbs from the shipped wet-bulb table (python -m "
                      "astral_dsl.analyses.climate_table --write)",
            "columns": [*COLUMNS, "stamps"], "climates": entries}


def main(argv=None) -> int:
    from astral_dsl.analyses.fluid_table import compare_or_write

    return compare_or_write(argv, "python -m astral_dsl.analyses.climate_table", generate, PATH,
                            lambda table: json.dumps(table, indent=1),
                            "a parse of the stdlib's climate files with the shipped wet-bulb "
                            "table")


if __name__ == "__main__":
    raise SystemExit(main())
