"""A generator of observed data with known faults, for proving the diagnosis: it replays Seer's
timeline of a job on every rank with noise, clock offsets and injected faults, and writes
profiler traces or rank logs. It shares no code with the diagnosis (astral_dsl/diagnose)."""
from astral_dsl.synth.faults import Fault, KINDS, Noise
from astral_dsl.synth.generator import SynthError, Synthetic, generate

__all__ = ["Fault", "KINDS", "Noise", "SynthError", "Synthetic", "generate"]
