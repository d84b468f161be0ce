"""Faults the generator can inject, and how they slow the traffic that crosses them.

Each fault names one part by its stable name (the rank map's names): a GPU (compute slower by a
factor), a NIC port (its link runs at a fraction of its rate), a first-tier or upper-tier switch
(every link through it at a fraction), one uplink between tiers (`tor[i] -- agg[j]`, at a
fraction), a GPU's NVLink port (`nvlink`, named by its GPU: the traffic it exchanges with the
GPUs of its NVLink domain at a fraction of its rate), or a link that is intermittently bad (flapping: bad windows in time at a fraction of
its rate). A GPU with `windows` is slow only in them (a fault that starts mid-run: one window to
the run's end). `fast` is no part: the whole job runs `severity` times faster than its
forecast (a faster GPU or software than the forecast assumes). The generator's own flow model decides what crosses
what (generator.py); nothing here is shared with the diagnosis."""
from __future__ import annotations

from typing import Optional, Tuple


from astral_dsl import records
from astral_dsl.diagnose.clocks import MAX_DRIFT

KINDS = ("gpu", "nic_port", "tor", "agg", "uplink", "nvlink", "link_flap", "fast")


@records.frozen
class Fault:
    kind: str                    # one of KINDS
    part: str                    # the stable name of the part
    severity: float              # gpu: compute x (1 + severity); fast: every duration /
    #                              severity; others: rate x severity
    rank: Optional[int] = None   # gpu, nic_port, nvlink, link_flap: the rank behind the part
    windows: Tuple[Tuple[float, float], ...] = ()   # link_flap, gpu: bad (start, end)
    #                                                 seconds from the run's start (clock-free)

    def to_json(self):
        doc = {"kind": self.kind, "part": self.part, "severity": self.severity}
        if self.rank is not None:
            doc["rank"] = self.rank
        if self.windows:
            doc["bad_windows_s"] = [list(w) for w in self.windows]
        return doc


# the most a drill draws a host's clock drift from, either way: `astral diagnose` sets aside a
# host whose drift is beyond MAX_DRIFT (500 ppm, NTP's frequency tolerance) from its set's
# median, and two hosts drawn in +-D differ by up to 2 D, so a healthy clock drawn past half of
# it could be set aside as a bad one (E789: --drift 490 --seed 4 on a 16-host job)
MAX_DRAWN_DRIFT = MAX_DRIFT / 2


@records.frozen
class Noise:
    """Realistic variation (defaults: a few percent, as measured kernel-to-kernel on busy
    clusters; clock offsets of NTP-synchronised hosts)."""
    kernel: float = 0.02         # per-block compute jitter (relative, normal)
    comm: float = 0.03           # per-transfer / collective jitter (relative, log-normal)
    iteration: float = 0.01      # iteration-to-iteration variation of all compute
    gpu_spread: float = 0.01     # per-GPU static speed spread
    clock: float = 0.02          # per-host clock offset: uniform in +-clock seconds
    drift: float = 0.0           # per-host clock drift: uniform in +-drift (1e-5: 10 ppm; a
    #                              free-running quartz clock drifts tens of ppm), at most
    #                              MAX_DRAWN_DRIFT


__all__ = ["Fault", "KINDS", "MAX_DRAWN_DRIFT", "Noise"]
