"""A climate file's text read for its hours (analyses/climate.py finds the file and keeps what
was read): dry bulb, dew point and station pressure hour by hour, and the station's elevation.

Two formats, told apart by their first line:

- EnergyPlus weather (EPW): a `LOCATION,` header line (..., latitude, longitude, time zone,
  elevation in m), seven more header lines, then one line per hour: year, month, day, hour
  (1-24), minute, data source flags, dry bulb (degC), dew point (degC), relative humidity (%),
  atmospheric station pressure (Pa), ... (EnergyPlus Auxiliary Programs, "Weather Converter
  Program": the EPW data dictionary; missing values 99.9 degC and 999999 Pa);
- NREL TMY3 CSV: a station line (id, name, state, UTC offset, latitude, longitude, elevation in
  m), a line of column names, then one line per hour with `Date (MM/DD/YYYY)`, `Time (HH:MM)`,
  `Dry-bulb (C)`, `Dew-point (C)` and `Pressure (mbar)` among its columns (Wilcox and Marion,
  "Users Manual for TMY3 Data Sets", NREL/TP-581-43156, 2008; missing values -9900)."""
from __future__ import annotations

import gc
import io
from typing import List, Optional, Tuple

from astral_dsl import records
from astral_dsl.units import readable

MAX_HOURS = 8784
DRY_BULB_C = (-90.0, 65.0)        # beyond the records (-89.2 degC Vostok, 56.7 degC Death Valley)
PRESSURE_PA = (30000.0, 120000.0)


@records.frozen(slots=False)
class Climate:
    name: str                          # as the design names it
    format: str                        # "EPW" or "TMY3"
    place: str
    elevation_m: Optional[float]
    stamps: Tuple[str, ...]            # "MM-DD HH:00" of each hour (the hour it ends)
    dry_bulb: Tuple[float, ...]        # degC
    dew_point: Tuple[float, ...]       # degC (at most the dry bulb)
    pressure: Tuple[float, ...]        # Pa
    wet_bulb: Tuple[float, ...] = ()   # degC (CoolProp's, analyses/humid_air.py)
    digest: str = ""                   # the file's SHA-256 (what derived values are keyed by)

    @property
    def hours(self) -> int:
        return len(self.dry_bulb)


class ClimateError(ValueError):
    """A climate file that cannot be found or read (`missing`), or that is malformed."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


def parse(data: bytes, name: str) -> Climate:
    """An EPW or TMY3 file's hours; ClimateError for anything else."""
    text = data.decode("utf-8", errors="replace") if _utf8(data) else data.decode("latin-1")
    lines = text.splitlines()
    if not lines:
        raise ClimateError(f"climate file `{name}` is empty")
    if lines[0].upper().startswith("LOCATION,"):
        return _epw(lines, name)
    return _tmy3(lines, name)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _number(text: str, what: str, name: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ClimateError(f"climate file `{name}`, line {line}: {what} `{text.strip()[:20]}` "
                           f"is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ClimateError(f"climate file `{name}`, line {line}: {what} is not a number")
    return value


def _rows(lines: List[str]) -> List[List[str]]:
    """Header lines, which may quote their fields."""
    import csv          # here, for start-up: a check on a stdlib climate file parses no header

    return list(csv.reader(io.StringIO("\n".join(lines))))


def _split(lines: List[str]):
    """Hourly lines: numbers and flags, never quoted (a quote is malformed, not a field)."""
    return (line.split(",") for line in lines)


def _epw(lines: List[str], name: str) -> Climate:
    head = _rows(lines[:1])[0]
    if len(head) < 10:
        raise ClimateError(f"climate file `{name}`: its LOCATION line has {len(head)} fields, "
                           f"not 10 (EPW)")
    elevation = _check_elevation(name, _number(head[9], "the elevation", name, 1))
    place = _place(head[1:4], head[6], head[7], elevation)
    # month, day, hour; dry bulb, dew point, pressure (Pa); missing marks
    hours = _hours(lines, 8, name, (1, 2, 3), (6, 7, 9), 1.0, (99.9, 99.9, 999999.0),
                   lambda row: (row[1], row[2], row[3]), "the EPW's 35")
    return Climate(name, "EPW", place, elevation, *hours)


def _tmy3(lines: List[str], name: str) -> Climate:
    if len(lines) < 3:
        raise ClimateError(f"climate file `{name}` is neither an EPW file (its first line "
                           f"starts with LOCATION) nor a TMY3 file (a station line, a line of "
                           f"column names, then hours)")
    head = _rows(lines[:2])
    station, columns = (head + [[], []])[:2] if len(head) < 2 else head
    wanted = {"Date (MM/DD/YYYY)": None, "Time (HH:MM)": None, "Dry-bulb (C)": None,
              "Dew-point (C)": None, "Pressure (mbar)": None}
    for i, col in enumerate(columns):
        if col.strip() in wanted:
            wanted[col.strip()] = i
    absent = [c for c, i in wanted.items() if i is None]
    if absent or len(station) < 7:
        raise ClimateError(f"climate file `{name}` is neither an EPW file (its first line "
                           f"starts with LOCATION) nor a TMY3 file: "
                           + (f"no column {', '.join(f'`{c}`' for c in absent)}" if absent
                              else "its station line has fewer than 7 fields"))
    elevation = _check_elevation(name, _number(station[6], "the elevation", name, 1))
    place = _place(station[1:3], station[4], station[5], elevation)
    idate, itime, idry, idew, ipress = wanted.values()

    def when(row):
        date, time = row[idate].split("/"), row[itime].split(":")
        if len(date) != 3 or len(time) != 2:
            raise ValueError
        return date[0], date[1], time[0]

    hours = _hours(lines, 2, name, None, (idry, idew, ipress), 100.0,
                   (-9900.0, -9900.0, -9900.0), when, "its column names'")
    return Climate(name, "TMY3", place, elevation, *hours)


def _hours(lines, first, name, _unused, columns, pressure_scale, missing, when, width):
    """(stamps, dry bulbs, dew points, pressures in Pa) of the hourly lines from line `first`
    (0-based): every line at once, and line by line only to say which one is wrong."""
    body = [line for line in lines[first:] if line.strip(" ,\t")]
    if not body:
        raise ClimateError(f"climate file `{name}` holds no hours")
    if len(body) > MAX_HOURS:
        raise ClimateError(f"climate file `{name}` holds {len(body):,} hours, more than a year "
                           f"({MAX_HOURS:,})")
    need = max(columns) + 1
    it, id_, ip = columns
    collecting = gc.isenabled()
    gc.disable()              # a year of rows is 300,000 strings: collecting them halves the speed
    try:
        rows = [line.split(",", need) for line in body]
        dry = [float(r[it]) for r in rows]
        dew = [float(r[id_]) for r in rows]
        press = [float(r[ip]) * pressure_scale for r in rows]
        stamps = [_stamp(*when(r)) for r in rows]
    except (ValueError, IndexError):
        _find_bad(lines, first, name, columns, need, when, width)
        raise                                   # pragma: no cover - _find_bad raises
    finally:
        if collecting:
            gc.enable()
    for values, gap, what in ((dry, missing[0], "dry bulb"), (dew, missing[1], "dew point"),
                              (press, missing[2] * pressure_scale, "pressure")):
        if gap in values:
            n = _line_of(lines, first, body[values.index(gap)])
            raise ClimateError(f"climate file `{name}`, line {n}: the {what} is missing (the "
                               f"format's missing-value mark); a typical year has every hour")
    for values, (lo, hi), what in ((dry, DRY_BULB_C, "dry bulb"), (dew, DRY_BULB_C, "dew point"),
                                   (press, PRESSURE_PA, "station pressure")):
        bad = next((v for v in values if not lo <= v <= hi), None)
        if bad is not None:
            n = _line_of(lines, first, body[values.index(bad)])
            raise ClimateError(f"climate file `{name}`, line {n}: a {what} of {bad:g} is beyond "
                               f"any weather record")
    return tuple(stamps), tuple(dry), tuple(min(d, t) for d, t in zip(dew, dry)), tuple(press)


def _stamp(month: str, day: str, hour: str) -> str:
    m, d, h = int(month), int(day), int(hour)
    if not (1 <= m <= 12 and 1 <= d <= 31 and 0 <= h <= 24):
        raise ValueError
    return f"{m:02d}-{d:02d} {h:02d}:00"


def _line_of(lines, first, text) -> int:
    return lines.index(text, first) + 1


def _find_bad(lines, first, name, columns, need, when, width) -> None:
    for n, line in enumerate(lines[first:], start=first + 1):
        if not line.strip(" ,\t"):
            continue
        row = line.split(",", need)
        if len(row) < need:
            raise ClimateError(f"climate file `{name}`, line {n}: {len(row)} fields, fewer than "
                               f"{width}")
        try:
            _stamp(*when(row))
        except (ValueError, IndexError):
            raise ClimateError(f"climate file `{name}`, line {n}: its date and hour are not "
                               f"a month (1-12), a day (1-31) and an hour (0-24)") from None
        for i, what in zip(columns, ("dry bulb", "dew point", "pressure")):
            _number(row[i], f"the {what}", name, n)
    raise ClimateError(f"climate file `{name}` is malformed")      # pragma: no cover


# what a header writes where it has no name (PVGIS's EPW: `LOCATION,unknown,-,unknown,...`)
_NO_NAME = {"", "-", "unknown", "n/a", "na", "none", "null"}


def _place(names, latitude: str, longitude: str, elevation: float) -> str:
    """The place the header names (city, state, country), without its placeholders; where it
    names none, its coordinates and elevation ("45.00 N, 8.00 E, 250 m"), or "" when they are
    not numbers on the globe."""
    named = [p.strip() for p in names if p.strip().lower() not in _NO_NAME]
    if named:
        return ", ".join(named)
    try:
        lat, lon = float(latitude), float(longitude)
    except ValueError:
        return ""
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        return ""
    return (f"{abs(lat):.2f} {'N' if lat >= 0 else 'S'}, {abs(lon):.2f} "
            f"{'E' if lon >= 0 else 'W'}, {readable.grouped(elevation, 1)} m")


def _check_elevation(name: str, elevation: float) -> float:
    if not -500.0 <= elevation <= 9000.0:
        raise ClimateError(f"climate file `{name}`: an elevation of {elevation:g} m is beyond "
                           f"any place on land")
    return elevation


__all__ = ["Climate", "ClimateError", "DRY_BULB_C", "MAX_HOURS", "PRESSURE_PA", "parse"]
