"""Observed per-rank timelines of a running job: PyTorch profiler (Kineto) traces and compact
per-rank logs, read into one columnar form (records.RankTrace). docs/diagnose.md documents both
formats.

    from astral_dsl import observe
    obs = observe.load(["traces/"])          # files, directories; format from the content
    obs.ranks[0].summary()                   # per iteration: compute_s, comm_s, ...
    obs.diagnostics                          # every problem, with its file"""
from astral_dsl.observe.load import Observed, load, read_file
from astral_dsl.observe.records import PHASES, ProcessGroup, RankTrace

__all__ = ["Observed", "PHASES", "ProcessGroup", "RankTrace", "load", "read_file"]
