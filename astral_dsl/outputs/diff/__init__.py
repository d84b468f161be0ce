"""`astral diff A B`: what changed between two checked designs, as `terraform plan` shows a
change: parameters, `let`s and source-level values, counts, power and cooling, bill of
materials, checks, diagnostics that appear, disappear or change, and each job's forecast.
api/sides.py gathers one side, facts.py shapes it (checks.py its checks, diagnostics.py its
diagnostics), compare.py compares two, render.py prints the result for people or as JSON."""
from astral_dsl.outputs.diff.compare import Change, compare
from astral_dsl.outputs.diff.facts import SECTIONS, Side
from astral_dsl.outputs.diff.render import render, to_json

__all__ = ["Change", "SECTIONS", "Side", "compare", "render", "to_json"]
