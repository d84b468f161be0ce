"""What the fuzz campaigns share (tests/fuzzing.py and its deeper targets in
tests/fuzz_deep.py): the seeds, the mutations, the invariant's failure and the command line run
in this process with its invariant (exit 0, 1 or 2; no E000 and no traceback).

Seeds: the fuzz seed of test_fuzz.py, a training job, every example (examples/*.astral) and
every example of the documentation (the ```astral and ```astral-error blocks of docs/*.md, the
entry file of a multi-file one)."""
from __future__ import annotations

import contextlib
import io
import os
import random
import re
import sys
from pathlib import Path
from typing import List, Tuple

# this checkout, never an installed copy, here and in the processes a target starts (the
# language server); and the tests beside this file
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1])] + [
    p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
import test_fuzz as tf  # noqa: E402  (the seed, the vocabulary and the mutations)

REPO = Path(__file__).resolve().parents[1]
TIME_S = 30                      # CPU seconds per input (the reference's check is ~0.2 s; Seer's
                                 # budget ~2 s; `check --margins` of the reference ~18 s)
WALL_S = 120                     # wall seconds per input: an input blocked, not computing
MEMORY_BYTES = 3 * 1024 ** 3     # the campaign's address-space limit

JOB_SEED = """\
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
site S { racks = 2 x R }
model M { layers = 32, hidden = 4096, heads = 32, kv_heads = 8, ffn = 14336, vocab = 128256,
          seq = 8192 }
job big {
  model = M, placement = S, gpus = 64
  parallel { tp = 8, pp = 2, dp = 4, schedule = interleaved, virtual_stages = 2 }
  batch { global_batch = 256, micro = 1 }
  recompute = selective
}
"""


def _doc_examples() -> List[str]:
    """The entry text of every example of docs/*.md (test_docs.py reads them the same way)."""
    import test_docs

    return [test_docs._split(b.text)[0] for b in test_docs.BLOCKS]


# the reference design stays third (tests/test_fuzz_targets.py mutates it)
SEEDS = [tf.SEED, JOB_SEED, (REPO / "examples" / "astral.astral").read_text(encoding="utf-8")] + \
    [p.read_text(encoding="utf-8") for p in sorted((REPO / "examples").glob("*.astral"))
     if p.name != "astral.astral"] + _doc_examples()

# numbers at their extremes and unit exponents, put in place of a number of the seed
EXTREMES = ["1e308", "1e-300", "-0", "9007199254740993", "1e15", "1e9", "2^53", "0", "-1e308",
            "65536", "1e20", "0.0000001", "1 kW^12", "kW^-12", "(1 kW)^40", "-(1 kW)", "1e-9",
            "(? in 1..100)", "?", "4096", "2 ^ 1023", "1_000_000_000", "0.5", "1..0", "0..0"]
UNICODE = ["\u00e9", "\u00b5", "\u2028", "\ufeff", "\U0001F680", "\u202e", "\x1b]52;c;AA\x07",
           "\u0000", "\ud800"]
_NUMBER = re.compile(r"\b\d[\d_.eE]*\b")


def mutate(rng: random.Random, text: str) -> str:
    """One to four mutations of `text`."""
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["delete_char", "duplicate_char", "swap_chars", "delete_token",
                         "duplicate_token", "swap_tokens", "insert_token", "insert_token_glued",
                         "replace_word", "replace_word", "extreme", "extreme", "extreme",
                         "unicode", "splice"])
        if op == "extreme":
            found = list(_NUMBER.finditer(text))
            if found:
                m = rng.choice(found)
                text = text[:m.start()] + rng.choice(EXTREMES) + text[m.end():]
        elif op == "unicode":
            k = rng.randrange(len(text) + 1)
            text = text[:k] + rng.choice(UNICODE) + text[k:]
        elif op == "splice":
            other = rng.choice(SEEDS)
            a, b = sorted(rng.randrange(len(other) + 1) for _ in range(2))
            k = rng.randrange(len(text) + 1)
            text = text[:k] + other[a:b] + text[k:]
        else:
            text = tf._mutate(text, [(op, rng.randrange(10 ** 6), rng.randrange(10 ** 6),
                                      rng.choice(tf.VOCABULARY))])
    return text


class Failure(Exception):
    """The invariant does not hold; the message is the failure's class."""


def _cli(args: List[str]) -> str:
    """`astral ARGS` in this process; its output (the exit code is checked here)."""
    return _cli_rc(args)[1]


def _cli_rc(args: List[str]) -> Tuple[int, str]:
    """(exit code, output) of `astral ARGS` in this process, the invariant checked: exit 0, 1
    or 2, no E000, no traceback."""
    from astral_dsl.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code
    text = out.getvalue()
    if rc not in (0, 1, 2):
        raise Failure(f"exit {rc}: {_first_error(text)}")
    if "E000" in text or "Traceback" in text:
        raise Failure(f"E000/traceback: {_first_error(text)}")
    return rc, text


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "E000" in line or "Error" in line or "error" in line:
            return line.strip()[:160]
    return text.strip()[:160]


