"""The kinds of the plant: the electrical system (standards, feeders, cables, rectifiers,
batteries, transformers) and the cooling system (fluids, CDUs, liquid loops, air units, the
facility-water circuits and their chillers). model/kinds.py registers them with the others."""
from __future__ import annotations

from typing import Tuple

from astral_dsl.model.domains import ANY as ANY_SIGN
from astral_dsl.model.domains import POSITIVE, Domain, domain
from astral_dsl.model.fieldtypes import (ANY, BoolType, FieldSpec, KindSpec, ListType, QType,
                                         StrType, enum, make_kind, q, ref)
from astral_dsl.model.fluid_names import check_fluid_name

REDUNDANCY = ("n", "n_plus_1", "two_n")


def _approach(doc: str) -> FieldSpec:
    return q("temperature_delta", doc, sign=POSITIVE, limit=100, why="100 K")


def plant_kinds() -> Tuple[KindSpec, ...]:
    return (
        make_kind("power", "the electrical system", {},
                  nested=("feeder", "rectifier", "battery", "standard", "cable", "transformer"),
                  open_members=True),
        make_kind("standard", "a voltage standard and its normal range", dict(
            nominal=q("voltage", required=True), min=q("voltage"), max=q("voltage"),
            current=enum("dc", "ac"),
            equipment_min=q("voltage", "lowest input voltage the equipment on such a bus "
                                       "accepts (default: `min`)"))),
        make_kind("feeder", "a power feed (HVDC or AC)", dict(
            current=enum("dc", "ac", required=True), voltage=q("voltage", required=True),
            capacity=q("power", "rated power", sign=POSITIVE), phases=q("count", low=1, high=3),
            power_factor=q("ratio", high=1, sign=POSITIVE), side=enum("A", "B"), serves=ANY,
            standard=ref("standard"),
            efficiency=q("ratio", "conversion efficiency", high=1, sign=POSITIVE),
            conductor_area=q("area", sign=POSITIVE, limit=1.0, why="1 m^2 of copper"),
            length=q("length"), conductor_temperature=q("temperature"),
            max_voltage_drop=q("ratio", high=1),
            max_utilization=q("ratio", "largest share of its rated current the load may draw "
                                       "(NetBox's feed `max_utilization`, whole percent from "
                                       "1 %), e.g. `80 %`", low=0.01, high=1),
            count=q("count", "how many such feeders", low=1, limit=1e6),
            conductors=q("count", "parallel conductor sets", low=1, limit=1e4),
            cable=ref("cable"),
            material=enum("copper", "aluminium", doc="conductor material (else the `cable`'s)"),
            ampacity=q("current", "rated current of one conductor", sign=POSITIVE),
            reactance=q("impedance_per_length",
                        "AC reactance of one conductor, e.g. `0.08 ohm/km`"),
            rectifier=ref("rectifier"), battery=ref("battery"),
            network=FieldSpec(BoolType(), doc="also supplies the switches of the fabrics "
                                              "attached at or below its owner"),
            mechanical=FieldSpec(BoolType(), doc="supplies the facility's own consumers "
                                                 "(CDUs, pumps, fans, chillers, heat "
                                                 "rejection, lighting and auxiliaries)"),
            min_input=q("voltage", "lowest input voltage of the equipment on its bus (default: "
                                   "its standard's `equipment_min`, else `min`)"))),
        make_kind("cable", "an ampacity table for a conductor type", dict(
            material=enum("copper", "aluminium"),
            areas=FieldSpec(ListType(QType("area", domain=domain("area", POSITIVE, 1.0))),
                            required=True, doc="cross-sections"),
            ampacities=FieldSpec(ListType(QType("current", domain=domain("current", POSITIVE))),
                                 required=True, doc="rated current for each cross-section"))),
        make_kind("rectifier", "a rectifier cabinet", dict(
            module=q("power", "module rating", sign=POSITIVE), modules=q("count", limit=1e6),
            redundancy=enum(*REDUNDANCY), efficiency=q("ratio", high=1, sign=POSITIVE),
            derate=q("ratio", high=1, sign=POSITIVE),
            # no module idles at a tenth of its rating: a double-conversion UPS loses a few %
            # of it at no load, a rectifier module under 1 % (Schneider Electric White Paper
            # 113, the modules' data sheets); 100 % had drawn every module's rating all year
            no_load_loss=q("ratio", "what each installed module draws at no load, as a share "
                                    "of its rating", high=1, limit=0.1,
                           why="a double-conversion UPS loses a few % of its rating at no load, "
                               "a rectifier module under 1 %: Schneider Electric White Paper "
                               "113"))),
        make_kind("battery", "battery strings on a DC bus", dict(
            autonomy=q("time", required=True, sign=POSITIVE, limit=604800, why="a week"),
            chemistry=enum("lead_acid", "lithium_ion"),
            cells=q("count", low=1, limit=1e4),
            end_voltage=q("voltage", "end-of-discharge voltage per cell"),
            # IEEE Std 485: margins on the capacity, never below 1
            aging_factor=q("number", low=1, sign=POSITIVE, limit=100),
            design_factor=q("number", low=1, sign=POSITIVE, limit=100),
            temperature_factor=q("number", sign=POSITIVE, limit=100),
            efficiency=q("ratio", high=1, sign=POSITIVE),
            string_capacity=q("charge", "capacity of one string at the autonomy's discharge "
                                        "rate"),
            strings=q("count", "parallel strings", low=1, limit=1e6),
            recharge_rate=q("number", "recharge current over the capacity in Ah, per hour "
                                      "(0.1: a 0.1 C recharge)", sign=POSITIVE, limit=10,
                            why="10 C, above the fastest-charging stationary cells, lithium "
                                "titanate; W633 holds each chemistry to its own",
                            least=1e-3))),
        make_kind("transformer", "a group of transformers at the utility point", dict(
            capacity=q("power", "rating of one transformer (kVA)", required=True,
                       sign=POSITIVE),
            count=q("count", "how many such transformers", low=1, limit=1e6),
            redundancy=enum(*REDUNDANCY),
            no_load_loss=q("power", "no-load (core) loss of one transformer"),
            load_loss=q("power", "load (winding) loss of one transformer at its rating"),
            power_factor=q("ratio", "power factor of the load it carries: its rating (kVA) "
                                    "holds kW / power factor", high=1, sign=POSITIVE))),
        make_kind("cooling", "the cooling system", {},
                  nested=("loop", "cdu", "air", "facility", "chiller"), open_members=True),
        make_kind("fluid", "a coolant", dict(
            coolprop=FieldSpec(StrType(check_fluid_name),
                               doc="CoolProp name: `Water`, `HEOS::NAME` or "
                                   "`INCOMP::NAME[fraction]`"),
            concentration=q("ratio", high=1))),
        make_kind("cdu", "a coolant distribution unit", dict(
            capacity=q("power", required=True, sign=POSITIVE), max_flow=q("flow", sign=POSITIVE),
            power=q("power", "one running CDU's own draw besides the loop's pumps"),
            approach=_approach("secondary supply above the facility water supply"))),
        make_kind("loop", "a liquid cooling loop", dict(
            fluid=ref("fluid", required=True), supply=q("temperature", required=True),
            rise=q("temperature_delta", required=True, sign=POSITIVE, limit=200, why="200 K"),
            cdu=ref("cdu"), cdus=q("count", limit=1e6),
            redundancy=enum(*REDUNDANCY), pump_head=q("pressure"),
            pump_efficiency=q("ratio", high=1, sign=POSITIVE),
            max_flow=q("flow", sign=POSITIVE),
            serves=ANY,
            network=FieldSpec(BoolType(), doc="also removes the cold-plate heat of the switches "
                                              "of the fabrics attached at or below its owner"),
            facility=ref("facility", doc="the facility-water circuit its CDUs draw on"))),
        make_kind("air", "air cooling", dict(
            supply=q("temperature", required=True),
            rise=q("temperature_delta", required=True, sign=POSITIVE, limit=200, why="200 K"),
            max_rack_heat=q("power", sign=POSITIVE), fan_power_ratio=q("ratio", high=1),
            serves=ANY,
            ashrae_class=enum("A1", "A2", "A3", "A4",
                              doc="ASHRAE air class the cooled equipment is rated for"),
            network=FieldSpec(BoolType(), doc="also removes the heat of the switch fabrics "
                                              "attached at or below its owner"),
            approach=_approach("supply air above the facility water supply (the coil's "
                               "approach)"),
            dew_point=q("temperature", "dew point of the supply air (its moisture)"),
            facility=ref("facility", doc="the facility-water circuit its coils draw on"))),
        make_kind("facility", "a facility-water circuit and its heat rejection", dict(
            water_class=enum("W17", "W27", "W32", "W40", "W45", "Wplus"),
            supply=q("temperature"),
            rise=q("temperature_delta", "return minus supply at the design load",
                   sign=POSITIVE, limit=200, why="200 K"),
            fluid=ref("fluid", doc="the circuit's water (default: water)"),
            pump_head=q("pressure"), pump_efficiency=q("ratio", high=1, sign=POSITIVE),
            rejection=enum("dry_cooler", "cooling_tower",
                           doc="what rejects the heat to the outdoor air"),
            rejection_approach=_approach("water leaving the heat rejection above the outdoor "
                                         "dry bulb (dry cooler) or wet bulb (cooling tower)"),
            economiser=enum("integrated", "switchover", "none",
                            doc="free cooling: with partial hours, all or nothing, or none"),
            chiller=ref("chiller"),
            free_cooling=q("time", "hours per year of free cooling", high=8760 * 3600),
            chiller_cop=q("number", sign=POSITIVE, limit=100, least=0.5,
                          least_why="far below any chiller's, 3 to 7"),
            rejection_fan_ratio=q("ratio", "fan power of the dry coolers or cooling towers per "
                                           "watt of heat they reject", high=1))),
        make_kind("chiller", "a chiller model: its COP at a rating point", dict(
            cop=q("number", "COP at the rating point", required=True, sign=POSITIVE, limit=100,
                  least=0.5, least_why="far below any chiller's, 3 to 7"),
            rated_supply=q("temperature", "chilled water leaving at the rating point"),
            rated_condenser=q("temperature", "condenser water entering at the rating point"),
            max_cop=q("number", "the highest COP it reaches (small lifts)", sign=POSITIVE,
                      limit=100, least=0.5, least_why="far below any chiller's, 3 to 7"))),
    )


# fields only a site has (the whole design's location and its building)
SITE_FIELDS = dict(
    climate=FieldSpec(StrType(), doc="typical-year hourly weather file (EnergyPlus EPW or NREL "
                                     "TMY3), in the project or `stdlib/climate/`"),
    # the air's pressure is the standard atmosphere's troposphere formula (ASHRAE Handbook,
    # Fundamentals 2017, ch. 1, eq. 3; its Table 1 runs from -500 m): it holds from 500 m
    # below sea level (the lowest land, the Dead Sea's shore, is about -430 m) to 11,000 m,
    # where the troposphere's lapse rate of 6.5 K/km ends (U.S. Standard Atmosphere, 1976);
    # above 3,050 m air-cooled IT is outside its ASHRAE class (W640, analyses/cooling.py)
    altitude=FieldSpec(QType("length", domain=Domain(
        ANY_SIGN, 11000.0, -500.0, "below the lowest land to the top of the troposphere, whose "
                                   "standard-atmosphere pressure the air's density is")),
        doc="elevation above sea level (air pressure)"),
    auxiliary=q("power", "lighting, offices, security and building services"),
)
