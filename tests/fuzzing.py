"""Fuzz targets, one per entry point, and the campaign runner behind `make fuzz`.

Targets: compile+check (`astral check --format json`), size, forecast, render to DOT, fmt,
export, and the language server's handlers (analysis, hover, definition, completion, outline,
formatting, called as the server calls them). Inputs are mutations of three valid designs (the
fuzz seed of test_fuzz.py, a training job, the reference design) by the strategies of
test_fuzz.py plus numbers at their extremes (1e308, 1e-300, 2^53 + 1, ...), unit exponents
(`kW^12`), unicode and splices of one seed into another.

The invariant: the command exits 0, 1 or 2; no E000 and no traceback; every input within TIME_S
seconds (and, in a campaign, the process within MEMORY_BYTES); fmt is idempotent and
meaning-preserving (the same diagnostics, by code, before and after). A failure's class is its
target and the kind of failure with numbers blanked out.

    python tests/fuzzing.py                       # 100,000 inputs across the targets (`make fuzz`)
    python tests/fuzzing.py --inputs 2000 --seed 7 --targets check,fmt

prints a report of the classes found, each with its count and its shortest input (written to
--out, default fuzz-findings/), and exits 1 when it found any. tests/test_fuzz_targets.py runs
a few hundred inputs of every target with a fixed seed inside `make test`."""
from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

# this checkout, never an installed copy; and test_fuzz beside this file
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
import test_fuzz as tf  # noqa: E402  (the seed, the vocabulary and the mutations)

REPO = Path(__file__).resolve().parents[1]
TIME_S = 30                      # per input (the reference's check is ~0.2 s; Seer's budget ~2 s)
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
SEEDS = [tf.SEED, JOB_SEED, (REPO / "examples" / "astral.astral").read_text(encoding="utf-8")]

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
    return text


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "E000" in line or "Error" in line or "error" in line:
            return line.strip()[:160]
    return text.strip()[:160]


def _cli_target(*args: str) -> Callable[[Path, str, random.Random], None]:
    def run(path: Path, text: str, rng: random.Random) -> None:
        _cli([a.replace("{file}", str(path)).replace("{dir}", str(path.parent)) for a in args])
    return run


def _render(path: Path, text: str, rng: random.Random) -> None:
    view = rng.choice(["cluster", "pod", "rack", "power", "cooling"])
    _cli(["render", str(path), "-o", str(path.with_suffix(".dot")), "--view", view])


def _fmt(path: Path, text: str, rng: random.Random) -> None:
    import astral_dsl
    from astral_dsl.diagnostics import DiagnosticError
    from astral_dsl.fmt import FormatError, format_text

    try:
        once = format_text(text)
    except (DiagnosticError, FormatError):
        return                               # not formattable: the diagnostics say why
    if format_text(once) != once:
        raise Failure("fmt is not idempotent")
    codes = [sorted(d.code for d in astral_dsl.loads(t, name=path.name,
                                                     root=path.parent).diagnostics)
             for t in (text, once)]
    if codes[0] != codes[1]:
        raise Failure(f"fmt changed the meaning: {codes[0]} -> {codes[1]}")


def _lsp(path: Path, text: str, rng: random.Random) -> None:
    """The server's handlers, as it calls them in its jobs, at random positions."""
    from lsprotocol import types as lsp

    from astral_dsl.lsp import server
    from astral_dsl.lsp.analysis import analyse

    uri = path.as_uri()
    a = analyse(uri, path, text, 1)
    if any(d.code == "E000" for d in a.diagnostics):
        raise Failure("E000 in the analysis: " + next(d.message for d in a.diagnostics
                                                         if d.code == "E000")[:160])
    lines = text.split("\n")
    for _ in range(3):
        line = rng.randrange(len(lines) + 2)
        width = len(lines[line]) if line < len(lines) else 0
        pos = lsp.Position(line=line, character=rng.randrange(width + 3))
        if a.parsed:
            server._hover(a, "utf-16", pos)
            server._declaration(a, "utf-16", pos)
        server._completion(a if a.parsed else None, text, "utf-16", pos)
    server._symbols(a.entry.tree if a.parsed else None, text, "utf-16")
    server._formatting(text, uri, "utf-16")


TARGETS: Dict[str, Callable[[Path, str, random.Random], None]] = {
    "check": _cli_target("check", "--format", "json", "{file}"),
    "size": _cli_target("size", "{file}"),
    "forecast": _cli_target("forecast", "{file}"),
    "render": _render,
    "fmt": _fmt,
    "export": _cli_target("export", "{file}"),
    "lsp": _lsp,
}


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _class(target: str, exc: BaseException) -> str:
    if isinstance(exc, _Timeout):
        kind = f"over {TIME_S} s"
    elif isinstance(exc, MemoryError):
        kind = "out of memory"
    elif isinstance(exc, Failure):
        kind = str(exc)
    else:
        kind = f"{type(exc).__name__}: {exc}"
    return f"{target}: " + re.sub(r"\d+", "N", kind)[:200]


def campaign(inputs: int, seed: int, targets: Optional[List[str]] = None,
             folder: Optional[Path] = None) -> Dict[str, List[str]]:
    """`inputs` fuzzed inputs spread evenly over `targets`; {class: [inputs that hit it]}."""
    rng = random.Random(seed)
    names = targets or list(TARGETS)
    work = Path(tempfile.mkdtemp(prefix="astral_fuzz_")) if folder is None else folder
    (work / "astral.toml").write_text("")
    path = work / "fuzz.astral"
    found: Dict[str, List[str]] = {}
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for k in range(inputs):
            target = names[k % len(names)]
            text = mutate(rng, rng.choice(SEEDS))
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            signal.alarm(TIME_S)
            try:
                TARGETS[target](path, text, rng)
            except (Exception, _Timeout, MemoryError) as exc:   # noqa: BLE001 - classified
                found.setdefault(_class(target, exc), []).append(text)
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        if folder is None:
            shutil.rmtree(work, ignore_errors=True)
    return found


def report(found: Dict[str, List[str]], inputs: int, seconds: float,
           out: Optional[Path] = None) -> str:
    lines = [f"{inputs:,} inputs in {seconds:.0f} s; {len(found)} class(es) of failure found"]
    for n, (cls, texts) in enumerate(sorted(found.items(), key=lambda kv: -len(kv[1]))):
        shortest = min(texts, key=len)
        where = ""
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            file = out / f"class{n:02d}.astral"
            file.write_text(shortest, encoding="utf-8", errors="surrogatepass")
            where = f" -> {file}"
        lines.append(f"  {len(texts):6d} x {cls}{where}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python tests/fuzzing.py", description=__doc__.split("\n")[0])
    p.add_argument("--inputs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    args = p.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, resource.getrlimit(resource.RLIMIT_AS)[1]))
    names = [t for t in args.targets.split(",") if t]
    unknown = set(names) - set(TARGETS)
    if unknown:
        p.error(f"unknown targets {sorted(unknown)}; choose from {', '.join(TARGETS)}")
    start = time.monotonic()
    found = {}
    per_chunk = 1000            # progress on standard error every 1,000 inputs
    for first in range(0, args.inputs, per_chunk):
        n = min(per_chunk, args.inputs - first)
        for cls, texts in campaign(n, args.seed * 1_000_003 + first, names).items():
            found.setdefault(cls, []).extend(texts)
        print(f"{first + n:,} inputs, {len(found)} class(es)", file=sys.stderr)
    print(report(found, args.inputs, time.monotonic() - start, args.out))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
