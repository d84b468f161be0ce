"""Context parallelism's split of the sequence (seer/validate_layout.py cp_split): the rule
validation and `astral search` share, and the ring's kernel priced once a ring."""
from __future__ import annotations

from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.validate_layout import CP_TILE, cp_split

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 300e9, (25e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                      Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def test_the_sequence_splits_into_two_chunks_a_rank_of_at_least_a_tile():
    assert CP_TILE == 128
    assert cp_split(8192, 1) is None            # no split
    assert cp_split(8190, 3) is None            # 8,190 / 6 = 1,365 tokens a chunk
    assert cp_split(8190, 2) == "seq"           # 8,190 / 4 = 2,047.5: not 2 x 2 equal chunks
    assert cp_split(8192, 32) is None           # 8,192 / 64 = 128: one tile a chunk
    assert cp_split(8192, 64) == "tile"         # 8,192 / 128 = 64 < 128
    assert cp_split(8192, 4096) == "tile"       # 1 token a chunk (the 524,288-GPU search's)
    assert cp_split(131072, 512) is None        # 131,072 / 1,024 = 128


def test_the_ring_prices_its_kernel_once_and_repeats_it():
    """cp = 8 on 8,192 tokens: 8 steps of a layer's forward, each an operator of its own with
    the same cost (1/8 of the FLOPs on 1,024 keys), the kernel priced once (it was priced at
    each step: 615,867 pricings for 1,891 rings in a 524,288-GPU search)."""
    par = ParallelSpec(tp=1, pp=32, dp=1, cp=8, sp=False)
    job = JobSpec("cp", LLAMA_8B, par, 8, 1, 8192, "none", "bf16")
    costs = Costs(H100, "bf16")
    calls = []
    flash = costs.flash
    costs.flash = lambda *a: calls.append(a) or flash(*a)
    ops = Lowering(job, costs, NET).template(1, 0, "F").ops      # stage 1: one layer
    kernels = [o for o in ops if o.name == "flash attention"]
    assert len(calls) == 1 and len(kernels) == 8 and len({id(o) for o in kernels}) == 8
    # 2 (QK and PV) x 2 x 32 heads x 1,024 query rows (8,192 / 8) x 128 x the 4,096 keys a
    # causal query sees on average, / 8 steps
    assert {(o.flops, o.dur, o.nbytes) for o in kernels} == {
        (2 * 2 * 32 * 1024 * 128 * 4096 / 8, kernels[0].dur, kernels[0].nbytes)}
    assert sum(o.stream == "cp" for o in ops) == 7
