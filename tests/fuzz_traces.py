"""A mutation campaign on profiler traces, beside `make test` (`make fuzz-traces`): real and
generated traces cut, with bytes flipped, spliced, deleted, or with hostile tokens inserted
(unclosed arrays, lone surrogates, 1e400, 2^64, -0, ...), each read by the trace reader. The
invariant (tests/test_trace_reader.py): it answers without raising, the same plain and gzipped,
and where msgspec's schema decode takes the document, the full parse gives the same result.

    python tests/fuzz_traces.py --inputs 5000 --seed 1

Prints the count of inputs, of those the schema decode took, and every failing input's file
(under --out)."""
from __future__ import annotations

import argparse
import gzip
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]      # this checkout, never an installed copy

TOKENS = (b"[", b'{"a":', b'"\\ud800"', b"1e400", b"-0", b"18446744073709551616", b"null,",
          b"true", b'"nccl', b"ProfilerStep#", b"\xff", b'"correlation":', b"-1e-400")


def mutate(rng: random.Random, body: bytes) -> bytes:
    b = bytearray(body)
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(b[:rng.randrange(len(b))])
    if kind == 1:
        for _ in range(rng.randrange(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 2:
        for _ in range(rng.randrange(1, 20)):
            i, j = rng.randrange(len(b)), rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randrange(200)]
    elif kind == 3:
        i = rng.randrange(len(b))
        b[i:i] = rng.choice(TOKENS) * rng.randrange(1, 2000)
    elif kind == 4:
        for _ in range(rng.randrange(1, 10)):
            i = rng.randrange(len(b))
            del b[i:i + rng.randrange(10)]
    else:
        i = rng.randrange(len(b))
        b[i:i] = b"[" * 3000 + b"]" * 3000         # deep, balanced
    return bytes(b)


def seeds():
    out = [gzip.decompress(p.read_bytes())
           for p in sorted((REPO / "tests" / "fixtures" / "traces").glob("*.json.gz"))]
    out = [b for b in out if len(b) < 3_000_000]    # the 9.8 MB trace makes each input slow
    from test_trace_reader import _small
    return out + [_small()]


def campaign(inputs: int, seed: int, out: Path) -> int:
    from test_trace_reader import problems
    from astral_dsl.observe import tracedoc
    rng = random.Random(seed)
    bodies = seeds()
    decoded = failed = 0
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(inputs):
            body = mutate(rng, rng.choice(bodies))
            decoded += tracedoc.decode(body) is not None
            bad = problems(Path(tmp), "rank-0.json", body, packed=rng.random() < 0.2)
            if bad:
                failed += 1
                (out / f"trace-{seed}-{n}.json").write_bytes(body)
                print(f"input {n}: {bad[:3]}", flush=True)
    print(f"{inputs} inputs, {decoded} taken by the schema decode, {failed} failing "
          f"(written to {out})")
    return 1 if failed else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="fuzz-findings")
    a = ap.parse_args(argv)
    return campaign(a.inputs, a.seed, Path(a.out))


if __name__ == "__main__":
    sys.exit(main())
