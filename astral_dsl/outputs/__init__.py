"""Outputs: diagnostics for people and machines, JSON documents, exports."""
