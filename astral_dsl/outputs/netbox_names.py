"""The names of `astral export --netbox`'s manufacturers and device types (netbox.py), unique
as NetBox keys them: a slug (lower-case letters, digits, `-` and `_`) names one manufacturer, and
one device type, whatever the names it was made from.

Two vendors whose slugs meet (`Acme Inc` and `acme-inc`), two locations whose paths do within
the slug's 100 characters, and two device types that differ but
share a name (a host template with other NICs passed as an argument) or a slug (`Node` and
`NODE`) were one row each: the first's devices named a manufacturer or a type that the files
no longer held (NetBox's import refuses them), or a type with another's interfaces. Each keeps
its name and slug where it is alone; the others, in the order the design lists them, get the
next free slug (`acme-inc-2`, its types' slugs made from it) and a type its model numbered
(`Node (2)`), said in a note.

A manufacturer is one whatever the case of its name: NetBox refuses a second manufacturer whose
name differs from one it has in case only, and "NVIDIA" and "Nvidia" are one company. The
vendors a design writes so are exported as the name it writes first (same_maker), said in a
note; they were two manufacturers (`nvidia`, `nvidia-2`), the devices of each under its own.

A device's name is the design's or its inventory's and is not renamed (an inventory binds by
it): two devices of a site whose names NetBox holds as one, whatever their case, are E706
(same_device_name), and nothing is written; so are two power panels of a site named alike
(E708, same_panel_name: a panel is named after the part that declares its feeders)."""
from __future__ import annotations

import re
import unicodedata
from typing import Dict, Iterable, List

import attrs

from astral_dsl.outputs.tally import Tally, more_like_it


def slug(text: str) -> str:
    """NetBox's slug: lower-case letters, digits, `-` and `_`; a letter with an accent or a
    compatibility form its ASCII letter, as NetBox's own slugify (Django's: NFKD, the rest
    dropped) makes it: `Société` is `societe` (it was `soci-t`, or `socie-te` written
    decomposed), `ＮＶＩＤＩＡ` `nvidia` (it was `x`)."""
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    out = re.sub(r"[^a-z0-9_-]+", "-", ascii_.lower()).strip("-")
    return out[:100] or "x"


class _Free:
    """Slugs unique among those it gave (`taken`): `base`, else `base-2`, `base-3`, ... (cut to
    NetBox's 100 characters), the first not taken. Each base's count resumes where its last
    search stopped (every slug below it was taken then, and stays taken), so that N names of one
    slug cost N checks, not N^2 / 2 (thousands of locations whose paths share their first 100
    characters)."""

    def __init__(self):
        self.taken: set = set()
        self._last: Dict[str, int] = {}

    def __call__(self, base: str) -> str:
        out, n = base, self._last.get(base, 1)
        while out in self.taken:
            n += 1
            out = f"{base[:100 - len(str(n)) - 1]}-{n}"
        self._last[base] = n
        self.taken.add(out)
        return out


def slugs(names: Iterable[str]) -> Dict[str, str]:
    """Each name's slug, unique among them (in the order of `names`, which may repeat): a
    manufacturer's, a site's or location's (of a path: cut to 100 characters, two long paths
    that differ past them had one)."""
    out: Dict[str, str] = {}
    free = _Free()
    for name in names:
        if name not in out:
            out[name] = free(slug(name))
    return out


def same_maker(types: Dict[object, "DeviceType"], notes: List[str]
               ) -> Dict[object, "DeviceType"]:
    """`types` with the manufacturers whose names differ in case only (or in the spaces around
    them, or in their Unicode form: _fold) made one: the name the design's order gives first, said in `notes`."""
    first: Dict[str, str] = {}
    renamed: Dict[str, set] = {}
    for t in types.values():
        name = first.setdefault(_fold(t.manufacturer), t.manufacturer)
        if name != t.manufacturer:
            renamed.setdefault(name, set()).add(t.manufacturer)
    for name, others in renamed.items():
        notes.append("manufacturer " + ", ".join(f"`{o}`" for o in sorted(others))
                     + f" is exported as `{name}`: NetBox holds one manufacturer of a name "
                     "whatever its case")
    return {key: t if first[_fold(t.manufacturer)] == t.manufacturer else attrs.evolve(
        t, manufacturer=first[_fold(t.manufacturer)],
        slug=slug(f"{first[_fold(t.manufacturer)]}-{t.model}")) for key, t in types.items()}


def _fold(name: str) -> str:
    """The name NetBox tells apart from no other: its compatibility form (NFKC: `Société`
    composed or decomposed, `ＮＶＩＤＩＡ` as `NVIDIA`), its spaces collapsed, its case folded."""
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def distinct(types: Dict[object, "DeviceType"], makers: Dict[str, str],
             notes: List[str]) -> Dict[object, "DeviceType"]:
    """`types` (key -> a DeviceType, in the design's order) with each distinct device type
    named apart: its slug unique (made from its manufacturer's, `makers`), and its model too
    where another type of its manufacturer has that model (said in `notes`)."""
    renamed: Dict[object, object] = {}
    free = _Free()
    models: set = set()
    for t in types.values():
        if t in renamed:
            continue
        model, n = t.model, 1
        maker = makers[t.manufacturer]
        while (maker, model.lower()) in models or slug(f"{maker}-{model}") in free.taken:
            n += 1
            model = f"{t.model} ({n})"
        models.add((maker, model.lower()))
        renamed[t] = attrs.evolve(t, model=model, slug=free(slug(f"{maker}-{model}")))
        if model != t.model:
            notes.append(f"device type {t.model} of {t.manufacturer} is exported as {model}: "
                         f"another device type has its name or its slug ({t.slug}), and "
                         f"differs from it (ports, height or manufacturer)")
    return {key: renamed[t] for key, t in types.items()}


def _alike(rows, said_at) -> Tally:
    """`rows`: (key, path, *more); for each row whose key a row before it had, grouped by where
    it is said (`said_at(path, *more)`: (span, what the message needs)): the first such row of
    each span, (its path, the first row's path, what the message needs), and how many rows."""
    first: Dict[object, str] = {}
    groups = Tally()
    for key, path, *more in rows:
        other = first.setdefault(key, path)
        if other != path:
            span, said = said_at(path, *more)
            groups.add(span, (path, other, said))
    return groups


def same_device_name(found, sws, names: Dict[str, str], devices, file) -> List:
    """E706 for a device named as another of its site but for case: NetBox 4.7.3 keeps a
    device's name unique per site and tenant whatever its case (dcim/models/devices.py, Device:
    `UniqueConstraint(Lower('name'), 'site', 'tenant', nulls_distinct=False)`; the export writes
    no tenant), and its import refused the second. `names`: path -> the name written (the
    pattern's, or the inventory's, `devices`); one E706 per pattern or inventory row naming
    the second, with the first pair and how many more. The names are compared as Python
    lower-cases them (PostgreSQL's lower() of a UTF-8 database does as much for letters with
    one lower case)."""
    from astral_dsl.diagnostics import Severity
    from astral_dsl.outputs.netbox_lengths import placed, row_span

    def said_at(path, site, declared):
        row = devices.by_path.get(path) if devices else None
        row = row if row is not None and row.file is not None else None   # (a pattern's)
        span = row_span(row) if row is not None else \
            declared.span_of("name") if declared is not None else None
        return span, (site, row is not None)

    written = [(p.path, p.site, p.instance) for p in found if p.kind == "host"] \
        + [(s.path, s.site, s.declared) for s in sws if s.model is not None]
    groups = _alike((((site, names[path].lower()), path, site, declared)
                     for path, site, declared in written), said_at)
    out = []
    for span, (path, other, (site, by_row)), count in groups:
        out.append(placed(
            "E706", Severity.ERROR, f"`{names[path]}` ({path}) and `{names[other]}` ({other}) "
            f"are one device name to NetBox in site {names[site]}{more_like_it(count)}: NetBox "
            "keeps a device's name unique per site and tenant whatever its case (dcim.Device: "
            "UniqueConstraint(Lower('name'), 'site', 'tenant')), and its import would refuse "
            "the second", span,
            "the inventory's row names it: give it a name no other device of its site has, in "
            "any case" if by_row else "tell their names apart by more than case (NetBox "
            "compares them lower-cased)", file))
    return out


def same_panel_name(panels, by_path, file) -> List:
    """E708 for a power panel named as another of its site: the export names a part's panel
    after the part (`row0 power`: netbox._power), and NetBox 4.7.3 keeps a panel's name unique
    per site (dcim/models/power.py, PowerPanel: `UniqueConstraint(fields=('site', 'name'))`):
    the rows of each pod named `row{row}` gave two panels `row0 power`, and its import refused
    the second. `panels`: (site, location, name, the part's path) rows; one E708 per pattern
    (or declaration) naming the second part, with the first pair and how many more."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    def said_at(path, site, name):
        part = by_path.get(path)
        return part.instance.span_of("name") if part is not None else None, (site, name)

    groups = _alike((((site, name), path, site, name) for site, _location, name, path in panels),
                    said_at)
    out = []
    for span, (path, other, (site, name)), count in groups:
        out.append(Diagnostic(
            "E708", Severity.ERROR, f"the power panel `{name}` of {path} is the panel of "
            f"{other} too, in site {site}{more_like_it(count)}: NetBox keeps a power panel's "
            "name unique per site (dcim.PowerPanel: UniqueConstraint of site and name), and its "
            "import would refuse the second", span,
            "a panel is named after the part that declares its feeders: tell the parts' names "
            "apart in their site (`name = \"row{pod}-{row}\"`)", file=file))
    return out


__all__ = ["distinct", "same_device_name", "same_maker", "same_panel_name", "slug", "slugs"]
