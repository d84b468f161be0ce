"""A small exact unit algebra for datacenter engineering.

Why not pint: pint's defaults get three things wrong for this domain (`Gb` is the gilbert, bits
and bytes are dimensionless so `80 GB + 75 %` passes, and `40 degC + 10 K` is an offset-unit
error), its registry costs ~0.5 s to build (a whole `astral check` must take under 1 s), and
float scale factors make conversions inexact. Here every unit is an exact rational scale on eight
base dimensions (mass, length, time, current, temperature, information, operations, currency), and
temperature points are kept apart from temperature differences.
"""
from astral_dsl.units.dimension import DIMENSIONLESS, Dim, dimension_name, DIMENSION_TYPES
from astral_dsl.units.quantity import Quantity, UnitError, format_number, same_amount
from astral_dsl.units.table import Unit, UNITS, parse_unit, unit_names
from astral_dsl.units import readable

__all__ = [
    "DIMENSIONLESS",
    "DIMENSION_TYPES",
    "Dim",
    "Quantity",
    "Unit",
    "UNITS",
    "UnitError",
    "dimension_name",
    "format_number",
    "parse_unit",
    "readable",
    "same_amount",
    "unit_names",
]
