"""A mutation campaign on profiler traces, beside `make test` (`make fuzz-traces`): real and
generated traces cut, with bytes flipped, spliced, deleted, or with hostile tokens inserted
(unclosed arrays, lone surrogates, 1e400, 2^64, -0, ...), each read on both roads of the trace
reader. The invariant: both roads answer alike, or (JSON nested past Python's parsers' depth
in a skipped field, docs/diagnose.md) the Python road says E781; neither raises.

    python tests/fuzz_traces.py --inputs 5000 --seed 1
    python tests/fuzz_traces.py --inputs 3000 --asan      # the C road built with ASan + UBSan

With --asan the compiled module is rebuilt with AddressSanitizer and UndefinedBehaviorSanitizer
into a temporary folder and the campaign re-runs under them (LD_PRELOAD), so a memory error in
_tracescan.c or yyjson stops it with the sanitizer's report. Prints the count of inputs, of
those the compiled road served, and every failing input's file (under --out)."""
from __future__ import annotations

import argparse
import gzip
import importlib
import importlib.machinery
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import sysconfig
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
    from test_tracescan import _small
    return out + [_small()]


def campaign(inputs: int, seed: int, out: Path) -> int:
    from test_tracescan import differences, outcome, Raised
    from astral_dsl.observe import native
    if not native.available():
        print("the compiled trace reader is not available:", native.why_not)
        return 2
    print("compiled module:", native._module.__file__)
    rng = random.Random(seed)
    bodies = seeds()
    served = failed = 0
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rank-0.json"
        for n in range(inputs):
            body = mutate(rng, rng.choice(bodies))
            path.write_bytes(body)
            served += native.scan(body) is not None
            fast, slow = outcome(path, True), outcome(path, False)
            bad = [] if isinstance(fast, Raised) or isinstance(slow, Raised) else \
                differences(fast, slow)
            documented = (not isinstance(fast, Raised) and not isinstance(slow, Raised) and
                          [d.code for d in slow[1]] == ["E781"] and not slow[0] and
                          not any(d.code == "E781" for d in fast[1]))
            if isinstance(fast, Raised) or isinstance(slow, Raised) or (bad and not documented):
                failed += 1
                (out / f"trace-{seed}-{n}.json").write_bytes(body)
                print(f"input {n}: {fast if isinstance(fast, Raised) else ''} "
                      f"{slow if isinstance(slow, Raised) else ''} {bad[:3]}")
    print(f"{inputs} inputs, {served} served by the compiled road, {failed} failing "
          f"(written to {out})")
    return 1 if failed else 0


def asan(argv) -> int:
    """Rebuild the module with the sanitizers into a temporary folder, re-run under them."""
    import hatch_build
    folder = tempfile.mkdtemp(prefix="astral-asan-")
    so = os.path.join(folder, "_tracescan" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    include = sysconfig.get_paths()["include"]
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fsanitize=address,undefined",
                    "-fno-omit-frame-pointer",
                    f"-DASTRAL_SOURCE_SHA256=\"{hatch_build.source_digest(str(REPO))}\"",
                    f"-I{include}", str(REPO / hatch_build.SOURCES[0]),
                    str(REPO / hatch_build.SOURCES[1]), "-o", so], check=True)
    libs = [subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                           text=True, check=True).stdout.strip()
            for lib in ("libasan.so", "libubsan.so")]
    env = dict(os.environ, LD_PRELOAD=":".join(libs), ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1", ASTRAL_TRACESCAN_SO=so)
    args = [a for a in argv if a != "--asan"]
    try:
        return subprocess.run([sys.executable, __file__, *args], env=env).returncode
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _load_sanitized(so: str) -> None:
    name = "astral_dsl.observe._tracescan"
    loader = importlib.machinery.ExtensionFileLoader(name, so)
    spec = importlib.util.spec_from_file_location(name, so, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="fuzz-findings")
    ap.add_argument("--asan", action="store_true", help="build and run under ASan + UBSan")
    a = ap.parse_args(argv)
    if a.asan:
        return asan(argv)
    if os.environ.get("ASTRAL_TRACESCAN_SO"):
        _load_sanitized(os.environ["ASTRAL_TRACESCAN_SO"])
    return campaign(a.inputs, a.seed, Path(a.out))


if __name__ == "__main__":
    sys.exit(main())
