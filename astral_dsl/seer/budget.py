"""Seer's work budget: what a forecast may cost, whatever numbers a job states.

A forecast's work grows with the layers it lowers (operator templates) and with the pipeline
blocks it simulates (2 x pp x virtual stages x micro-batches per candidate of the rule); its
memory with both. The model's widths and the tokens of a micro-batch only scale numbers, but
beyond MAX_WIDTH and MAX_TOKENS they stop being representable as the floats Seer prices with
(10^308 heads, a 10^308-wide hidden layer), so they are bounded too. Everything else is closed-form or bounded by these (the rule tries
O(log2(global batch)) micro-batches and the divisors of a stage's layer count, or of it plus
one; the memory estimate
is closed-form in the micro-batches). A job over a limit gets E762, which names the limit, from
`astral check` and `astral forecast` alike, before any simulation runs.

The limits hold every published run by a wide margin (Megatron-LM's 1T on 3,072 GPUs: 128
layers, 2 x 64 x 1 x 512 = 65,536 blocks at micro-batch 1) and keep one simulation at the
limit to a few seconds of CPU and ~0.5 GB (benchmarks/bench_seer.py prints the figures;
docs/seer.md, "Speed", quotes them)."""
from __future__ import annotations

MAX_LAYERS = 10_000          # transformer layers lowered
MAX_BLOCKS = 1_000_000       # pipeline blocks in one simulation
MAX_WIDTH = 10_000_000       # hidden, FFN, vocabulary, heads, experts: 100x any model published
MAX_TOKENS = 100_000_000     # sequence length and tokens per micro-batch


def blocks(pp: int, v: int, microbatches: int) -> int:
    return 2 * pp * max(1, v) * max(1, microbatches)


def micro_candidates(per_replica: int):
    """The rule's micro-batches: the powers of two dividing B / DP, largest first."""
    out, b = [], 1
    while b <= per_replica and per_replica % b == 0:
        out.append(b)
        b *= 2
    return out[::-1] or [1]


def largest_micro(spec) -> int:
    return micro_candidates(max(1, spec.global_batch // spec.parallel.dp))[0]
