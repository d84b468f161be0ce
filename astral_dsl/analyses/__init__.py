"""Analyses over the design model (network, power, cooling, scenarios, sizing); Seer is
astral_dsl/seer/, the layer above."""
