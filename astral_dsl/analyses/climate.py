"""A site's climate: a typical-year hourly weather file, read for its dry bulb, dew point and
station pressure hour by hour (and the station's elevation), in EnergyPlus EPW or NREL TMY3
(climate_formats.py reads them).

A file is found like an import (semantics/modules.py): `stdlib/climate/NAME` in the shipped
stdlib, anything else relative to the project's root, never outside either; it must be a
regular file of at most 8 MiB. A typical year has 8,760 hours (8,784 in a leap year); a file
with fewer rows stands for the year in proportion (W643 says so). A project's file is read with
the design's reader (the one its modules were read with: a revision's file from git, an editor's
open buffer), the disk's by default. Parsed files of the disk are kept per process, keyed by
their path, size and modification time; those of another reader by their digest (_cached)."""
from __future__ import annotations

import base64
import os
import sys
from array import array
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

import attrs

from astral_dsl import filedigest, resources, usercache
from astral_dsl.analyses.climate_formats import MAX_HOURS, Climate, ClimateError, parse
from astral_dsl.semantics.modules import inside
from astral_dsl.semantics.source_files import file_sha256, read_file

_parsed: Dict[Tuple[str, int, int, str], Climate] = {}


def locate(name: str, root: Path, on_disk: bool = True) -> Path:
    """The file a `climate = "..."` names: in the stdlib or in the project, never outside;
    a regular file of the disk unless `on_disk` is False (one a reader will read)."""
    try:
        return _locate(name, root, on_disk)
    except (OSError, ValueError) as exc:       # a NUL byte, a name too long for the system
        if isinstance(exc, ClimateError):
            raise
        raise ClimateError(f"climate file `{name[:80]}` cannot be used as a path: "
                           f"{getattr(exc, 'strerror', None) or exc}", missing=True) from None


def _locate(name: str, root: Path, on_disk: bool) -> Path:
    if not name.strip():
        raise ClimateError("`climate` is empty: name a weather file", missing=True)
    parts = Path(name).parts
    if parts and parts[0] == "stdlib":
        base, rel = resources.stdlib_dir().resolve(), Path(*parts[1:]) if parts[1:] else None
    else:
        base, rel = root.resolve(), Path(name)
    if rel is None or Path(name).is_absolute():
        raise ClimateError(f"climate file `{name}` must be a path inside the project or "
                           f"`stdlib/climate/`", missing=True)
    path = base / rel
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        resolved = path
    if not inside(resolved, base):
        raise ClimateError(f"climate file `{name}` resolves outside the project and the stdlib",
                           missing=True)
    if on_disk and not resolved.is_file():
        what = "is not a regular file" if resolved.exists() else "not found"
        where = "the stdlib" if base != root.resolve() else "the project"
        raise ClimateError(f"climate file `{name}` {what} (looked in {where})", missing=True)
    return resolved


def load(name: str, root: Path, read: Optional[Callable[[Path], bytes]] = None) -> Climate:
    """The climate a site names; ClimateError when it cannot be used. A project's file is
    read with `read` when it is another reader than the disk's (the design's: a revision's
    file from git, cli/revision.py); a stdlib one, and any with no such reader, from the disk."""
    if read is not None and read is not read_file and Path(name).parts[:1] != ("stdlib",):
        return _read_with(name, root, read)
    path = locate(name, root)
    try:
        st = os.stat(path)
        key = (str(path), st.st_size, st.st_mtime_ns, name)
        hit = _parsed.get(key)
        if hit is not None:
            return hit
        climate = data = None
        if Path(name).parts[:1] == ("stdlib",):
            # whose hours may ship (analyses/climate_table.py): hashed without being held
            # (for start-up: semantics.source_files.file_sha256), and not again while the file is
            # unchanged (filedigest.py, for start-up), read only when they do not ship
            from astral_dsl.analyses import climate_table

            climate = climate_table.lookup(filedigest.sha256(path, lambda: file_sha256(path)),
                                           name)
        if climate is None:
            data = read_file(path)
    except OSError as exc:
        raise ClimateError(f"cannot read climate file `{name}`: {exc.strerror or exc}",
                           missing=True) from None
    if climate is None:
        climate = _cached(data, name)
    if len(_parsed) > 16:
        _parsed.clear()
    _parsed[key] = climate
    return climate


def digests(design) -> Tuple[str, ...]:
    """What decides the climates of `design`'s sites: each `climate` name with the SHA-256 of
    the bytes `load` would read for it (the design's reader for a project's file, the disk's
    otherwise), or why it cannot be read. Sizing's cache keys on it (pipeline_sizing.size): the same
    text with a climate file edited in place sizes afresh."""
    root = Path(design.root) if design.root else Path.cwd()
    out = []
    for site in design.roots:
        name = site.field("climate")
        if isinstance(name, str):
            out += [name, _digest(name, root, design.read)]
    return tuple(out)


def _digest(name: str, root: Path, read: Optional[Callable[[Path], bytes]]) -> str:
    try:
        if read is not None and read is not read_file and Path(name).parts[:1] != ("stdlib",):
            import hashlib

            return hashlib.sha256(read(locate(name, root, on_disk=False))).hexdigest()
        path = locate(name, root)
        return filedigest.sha256(path, lambda: file_sha256(path))
    except (OSError, ValueError) as exc:       # ClimateError too: the check reports it
        return f"unreadable: {exc}"


def _read_with(name: str, root: Path, read: Callable[[Path], bytes]) -> Climate:
    """A project's climate file read with the design's reader: nothing of it need be on the
    disk (a revision's is laid out in no folder), so it is kept by its digest only (_cached)."""
    path = locate(name, root, on_disk=False)
    try:
        data = read(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise ClimateError(f"climate file `{name}` not found (looked in the project)",
                               missing=True) from None
        raise ClimateError(f"cannot read climate file `{name}`: {exc.strerror or exc}",
                           missing=True) from None
    return _cached(data, name)


_NUMBERS = ("dry_bulb", "dew_point", "pressure", "wet_bulb")
VERSION = "climate 4"       # of what `parse` and `with_wet_bulbs` return: cached and shipped data


def _cached(data: bytes, name: str) -> Climate:
    """The parsed hours of a file, with their wet bulbs: those shipped for a stdlib file
    (analyses/climate_table.py), else from the per-user cache (keyed by the file's SHA-256 and
    the wet-bulb table's source), else parsed and stored there. The columns are stored as the
    bytes of their doubles (base64), so that reading them back costs a millisecond and gives the
    very numbers `parse` and `with_wet_bulbs` return."""
    import hashlib      # here: a check on a stdlib climate file hashes nothing (for start-up)

    from astral_dsl.analyses import climate_table, wetbulb_table

    digest = hashlib.sha256(data).hexdigest()
    shipped = climate_table.lookup(digest, name)
    if shipped is not None:
        return shipped
    key = f"{VERSION} {sys.byteorder} {digest} {wetbulb_table.source()}"
    entry = f"climate-{digest[:16]}"
    stored = usercache.read(entry, key)
    if isinstance(stored, dict):
        try:
            cols = {f: tuple(array("d", base64.b64decode(stored[f], validate=True)))
                    for f in _NUMBERS}
            stamps = tuple(str(stored["stamps"]).split(","))
            if len({len(c) for c in cols.values()} | {len(stamps)}) == 1 and \
                    0 < len(stamps) <= MAX_HOURS:
                return Climate(name, str(stored["format"]), str(stored["place"]),
                               float(stored["elevation_m"]), stamps, **cols, digest=digest)
        except (KeyError, TypeError, ValueError):
            pass
    climate = attrs.evolve(with_wet_bulbs(parse(data, name)), digest=digest)
    usercache.write(entry, key, {
        "format": climate.format, "place": climate.place, "elevation_m": climate.elevation_m,
        "stamps": ",".join(climate.stamps),
        **{f: base64.b64encode(array("d", getattr(climate, f)).tobytes()).decode("ascii")
           for f in _NUMBERS}})
    usercache.prune("climate-", keep=16)
    return climate


def with_wet_bulbs(climate: Climate) -> Climate:
    """The climate with each hour's wet bulb (what a cooling tower follows)."""
    from astral_dsl.analyses import humid_air

    try:
        return attrs.evolve(climate, wet_bulb=tuple(
            humid_air.wet_bulb(t, d, p) for t, d, p in
            zip(climate.dry_bulb, climate.dew_point, climate.pressure)))
    except ValueError as exc:          # a state CoolProp has no humid air for
        raise ClimateError(f"climate file `{climate.name}`: {exc}") from None



def of_site(site, root: Path, diags, read: Optional[Callable[[Path], bytes]] = None
            ) -> Optional[Climate]:
    """The climate a site's `climate` names, read with `read` (load), or None (not declared,
    or E652/E653 reported); W643 for a file shorter than a year."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    name = site.field("climate")
    if not isinstance(name, str):
        return None
    try:
        climate = load(name, root, read)
    except ClimateError as exc:
        diags.append(Diagnostic("E652" if exc.missing else "E653", Severity.ERROR, str(exc),
                                site.span_of("climate"),
                                "name an EPW or TMY3 file in the project, or one of "
                                "`stdlib/climate/`" if exc.missing else
                                "give it the hourly rows of a typical year (EnergyPlus EPW or "
                                "NREL TMY3)"))
        return None
    if climate.hours not in (8760, 8784):
        diags.append(Diagnostic("W643", Severity.WARNING,
                                f"climate file `{name}` holds {climate.hours:,} hours, not a "
                                f"year's 8,760: they stand for the year in proportion (each "
                                f"for {8760 / climate.hours:,.4g} h)", site.span_of("climate"),
                                "use a typical-year file (8,760 hourly rows)"))
    return climate


def of_sites(sites, first: Optional[Climate], root: Path, diags,
             read: Optional[Callable[[Path], bytes]] = None) -> Tuple[Optional[Climate], ...]:
    """Each site's own climate, the first's being `first` (of_site, read already): each other
    site's read as the first's is (E652, E653, W643 at the first site that names it; one file
    named again is read once), though the facility is computed on the first's (W645): W640
    reads each site's elevation."""
    names = [site.field("climate") for site in sites]
    out = [first] if sites else []
    for i, site in enumerate(sites[1:], start=1):
        seen = names.index(names[i])
        out.append(out[seen] if seen < i else of_site(site, root, diags, read))
    return tuple(out)
