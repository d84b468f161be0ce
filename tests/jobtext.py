"""A job's source text for the tests that add one to a fixture design (one shape, written
once): `job(name, model, gpus, parallel, batch)` with the `parallel` and `batch` records'
fields as written between their braces."""
from __future__ import annotations


def job(name: str, model: str, gpus: int, parallel: str, batch: str,
        placement: str = "Lab") -> str:
    return (f"\njob {name} {{\n  model = {model}\n  placement = {placement}\n  gpus = {gpus}\n"
            f"  parallel {{ {parallel} }}\n  batch {{ {batch} }}\n}}\n")


# a 70B job on 128 H100s whose memory estimate fits at 4,096 tokens and may not fit at 8,192
# (its `seq` a parameter): the tests of "may not fit" in sweep rows and the API
TIGHT = """\
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Llama3_70B }
param seq = 8192
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
site S { racks = 32 x R }
job tight {
  model = Llama3_70B, placement = S, gpus = 128, recompute = selective
  parallel { tp = 8, pp = 2, dp = 8, sp = true, zero = 1 }
  batch { global_batch = 128, micro = 2, seq = seq }
}
"""
