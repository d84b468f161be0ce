"""The numbers NetBox bounds, checked before `astral export --netbox` writes a file (netbox.py):
a rack's or device type's height NetBox's import refuses is E709, and nothing is written (as
E705 does for lengths: the devices refer to them); a power feed NetBox cannot hold is left out
of power_feeds.csv, or its number rounded to what NetBox holds, with W709 (no object the export
writes refers to a feed). Read from NetBox 4.7.3 (the `netbox` wheel on PyPI; see
tests/fixtures/netbox/README.md), for every numeric column the export writes:

- racks.csv `u_height`: `RackImportForm` takes it as a form IntegerField (whole units), and
  dcim/models/racks.py `Rack.u_height` (a PositiveSmallIntegerField) has MinValueValidator(1)
  and MaxValueValidator(RACK_U_HEIGHT_MAX), 100 (dcim/constants.py);
- device_types.csv `u_height`: dcim/models/devices.py `DeviceType.u_height` is a DecimalField of
  max_digits=4, decimal_places=1 (at most 999.9), and `DeviceType.clean()` refuses a height that
  is not in increments of 0.5 U;
- power_feeds.csv `voltage`: dcim/models/power.py `PowerFeed.voltage` is a SmallIntegerField
  (whole volts, at most 32,767: Django's range for it) with ExclusionValidator([0]); `amperage`
  a PositiveSmallIntegerField (at most 32,767) with MinValueValidator(1); `max_utilization` 1
  to 100, which E309 bounds at check time;
- devices.csv `position`: `Device.position` is a DecimalField (4, 1) from 1 to 100.5 in
  increments of 0.5, and `Device.clean()` refuses a position for a 0 U device type. A host's
  position is 1 plus the heights of the hosts below it in its rack (analyses/inventory.py), so
  with its rack's height whole and at most 100 U (here; E632 at check time keeps the hosts within
  it) and its hosts' heights in half units (here), it is in NetBox's range; a 0 U host is written
  without a position, as NetBox mounts one (netbox.py's note says so).

A rack's `width` is E707 (netbox_required.py). One E709 (W709) is said for each field of each
declaration, with the first value of its replicas that NetBox refuses and how many more."""
from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Dict, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.outputs.netbox_required import _name
from astral_dsl.outputs.tally import Tally, more_like_it

RACK_U_MAX = 100              # dcim/constants.py RACK_U_HEIGHT_MAX
SMALL = 32767                 # the largest a (Positive)SmallIntegerField holds
TYPE_U_BELOW = Decimal(1000)  # DeviceType.u_height: DecimalField(max_digits=4, decimal_places=1)
HALF = Decimal("0.5")
_WHOLE = re.compile(r"[0-9]+")


class Bounds:
    """The values NetBox refuses, grouped by (declaration, field): the first of each, and how
    many."""

    def __init__(self):
        self.groups = Tally()
        self.left_out: List[str] = []       # the feeders of each feed left out (W709)
        # feeder -> (its amperage, whole amperes written): derived from its capacity or its
        # cable's table, not a number the user wrote (netbox.py's note says it)
        self.rounded: Dict[str, Tuple[float, int]] = {}

    def _add(self, inst, field: str, message: str, span, hint: str, code="E709") -> None:
        self.groups.add((id(inst), field, code), (message, span, hint))

    def rack(self, inst, text: str) -> None:
        """racks.csv's `u_height` of a replica of rack `inst`."""
        if _whole(text) and 1 <= int(text) <= RACK_U_MAX:
            return
        declared = inst.field("units") is not None
        what = f"is {text} U tall" if declared else \
            f"declares no `units`, and the hosts it holds reach {text} U"
        self._add(inst, "units",
                  f"rack `{_name(inst)}` {what}: NetBox takes a rack's height as a whole number "
                  f"of units from 1 to {RACK_U_MAX} (dcim.Rack.u_height), and its import would "
                  f"refuse the rack", inst.span_of("units") if declared else inst.span,
                  f"declare the rack's height in whole rack units from 1 to {RACK_U_MAX}, e.g. "
                  f"`units = 48 U`" if declared else
                  f"hold fewer hosts in the rack: NetBox's racks are at most {RACK_U_MAX} U")

    def device_type(self, inst, text: str) -> None:
        """device_types.csv's `u_height` of the device type made from host or switch `inst`."""
        try:
            value = Decimal(text)
        except InvalidOperation:
            value = None
        if value is not None and 0 <= value < TYPE_U_BELOW and not value % HALF:
            return
        self._add(inst, "units",
                  f"{inst.kind} `{_name(inst)}` is {text} U tall: NetBox takes a device type's "
                  f"height in steps of 0.5 U below 1,000 U (dcim.DeviceType.u_height: 4 digits, "
                  f"1 after the point; DeviceType.clean() refuses another step), and its import "
                  f"would refuse the device type", inst.span_of("units"),
                  "declare its height in whole or half rack units, e.g. `units = 2 U` or "
                  "`units = 1.5 U`")

    def feed(self, feeder, voltage: str, amperage: float) -> Optional[Tuple[str, str]]:
        """power_feeds.csv's `voltage` and `amperage` of a feed of `feeder`, as NetBox holds
        them: a fractional voltage rounded to whole volts, a fractional amperage rounded down
        to whole amperes (the rating is a limit), one under 1 A written 1 A (W709 says each);
        None, the feed left out (W709), where NetBox cannot hold the voltage or the amperage
        (nothing in NetBox refers to a feed: the rest is written)."""
        out, said, declared = [], [], voltage
        if voltage and not _whole(voltage):
            written = int(Decimal(voltage).to_integral_value(ROUND_HALF_UP))
            said.append(("voltage",
                         f"feeder `{feeder.path}` runs at {_volts(voltage)} V: NetBox takes a "
                         f"feed's voltage in whole volts (dcim.PowerFeed.voltage, a "
                         f"SmallIntegerField), and power_feeds.csv gives it {written:,} V",
                         feeder.span_of("voltage"),
                         "declare the nominal voltage in whole volts, e.g. `voltage = 230 V`"))
            voltage = str(written)
        if voltage and not 0 < int(voltage) <= SMALL:
            out.append(("voltage",
                        f"feeder `{feeder.path}` runs at {_volts(declared)} V: not written to "
                        f"power_feeds.csv, as NetBox cannot hold it: a feed's voltage is a whole "
                        f"number of volts from 1 to {SMALL:,} (dcim.PowerFeed.voltage, a "
                        f"SmallIntegerField), and its import would refuse the feed",
                        feeder.span_of("voltage"),
                        "NetBox's power feeds run from a power panel to the racks' PDUs: declare "
                        "the feeder that serves the racks at the voltage its panel takes (after "
                        "the transformer)" if int(voltage) > SMALL else
                        "declare the nominal voltage in whole volts, e.g. `voltage = 48 V`"))
        amps, cut = _down(amperage)
        if amps > SMALL:
            out.append(("amperage",
                        f"feeder `{feeder.path}` is rated {amps:,} A: not written to "
                        f"power_feeds.csv, as NetBox cannot hold it: a feed's amperage is at "
                        f"most {SMALL:,} A (dcim.PowerFeed.amperage, a "
                        f"PositiveSmallIntegerField), and its import would refuse the feed",
                        feeder.span_of(_amperage_field(feeder)),
                        "declare it as feeders sharing the load, each rated within NetBox's "
                        "range (`count = 2`, each with its share of the `capacity` or the "
                        "`conductors`)"))
        elif amps < 1:
            said.append(("amperage",
                         f"feeder `{feeder.path}` is rated under 1 A: NetBox takes a feed's "
                         f"amperage from 1 A (dcim.PowerFeed.amperage, MinValueValidator(1)), "
                         f"and power_feeds.csv gives it 1 A", feeder.span_of(
                             _amperage_field(feeder)),
                         "declare the feeder's rating, 1 A or more"))
            amps = 1
        elif cut:
            field = _amperage_field(feeder)
            if field == "ampacity":             # a number the user wrote: W709
                said.append(("amperage",
                             f"feeder `{feeder.path}` is rated {amperage:,.2f} A: NetBox takes "
                             f"a feed's amperage in whole amperes (dcim.PowerFeed.amperage, a "
                             f"PositiveSmallIntegerField), and power_feeds.csv gives it "
                             f"{amps:,} A, rounded down (a rating is a limit the feed must not "
                             f"pass)", feeder.span_of(field),
                             "declare the rating in whole amperes"))
            else:                               # derived: the export's note says it
                self.rounded.setdefault(feeder.path, (amperage, amps))
        amperage = str(amps)
        for field, message, span, hint in out or said:
            self._add(feeder, field, message, span, hint, "W709")
        if out:
            self.left_out.append(feeder.path)
            return None
        return voltage, amperage

    def utilization(self, feeder, percent: float) -> str:
        """power_feeds.csv's `max_utilization` of a feed of `feeder`: whole percent, as NetBox
        holds it (dcim.PowerFeed.max_utilization, a PositiveSmallIntegerField from 1 to 100;
        E309 keeps a declared share within 1-100 % at check time), a fractional share rounded
        down (W709)."""
        whole, cut = _down(percent)
        if cut:
            self._add(feeder, "max_utilization",
                      f"feeder `{feeder.path}` may carry {percent:,.2f} % of its rating: NetBox "
                      f"takes a feed's max_utilization in whole percent "
                      f"(dcim.PowerFeed.max_utilization, a PositiveSmallIntegerField), and "
                      f"power_feeds.csv gives it {whole} %, rounded down (a limit)",
                      feeder.span_of("max_utilization"),
                      "declare the share in whole percent, e.g. `max_utilization = 80 %`",
                      "W709")
        return str(max(1, whole))

    def diagnostics(self, file, code: str = "E709") -> List[Diagnostic]:
        """The E709 (nothing is written), or the W709 (the files are written)."""
        out = []
        for (_inst, _field, said), (message, span, hint), count in self.groups:
            if said != code:
                continue
            more = more_like_it(count, " ({} more like it)")
            head, _, tail = message.partition(": ")
            severity = Severity.ERROR if code == "E709" else Severity.WARNING
            out.append(Diagnostic(code, severity, f"{head}{more}: {tail}", span, hint,
                                  file=file))
        return out


def _whole(text: str) -> bool:
    """Is `text` a whole number as Django's IntegerField reads it (digits; `:g` writes no
    `.0`)?"""
    return bool(_WHOLE.fullmatch(text))


def _down(value: float) -> Tuple[int, bool]:
    """`value` rounded down to a whole number as NetBox holds it, and whether that cut a
    fraction off (within 1e-9: 0.57 x 100 is 56.99999999999999, whole)."""
    whole = math.floor(value + 1e-9)
    return whole, value - whole > 1e-9


def _volts(text: str) -> str:
    return f"{int(text):,}" if _whole(text) else f"{float(text):,g}"


def _amperage_field(feeder) -> str:
    """The field netbox_required.feed_amperage took the amperage from."""
    if feeder.field("ampacity") is not None:
        return "ampacity"
    derived = feeder.field("cable") is not None and feeder.field("conductor_area") is not None
    return "cable" if derived else "capacity"


__all__ = ["Bounds"]
