"""Analyses over the design model (network, power, cooling, sizing, Seer)."""
