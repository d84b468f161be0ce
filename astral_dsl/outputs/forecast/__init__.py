"""Seer's forecast for people and tools: the text report and JSON fields (report), the Chrome
trace (trace) and the Gantt chart (plot)."""
