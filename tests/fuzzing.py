"""Fuzz targets, one per entry point, and the campaign runner behind `make fuzz`.

Targets: compile+check (`astral check --format json`), size, forecast, render to DOT, fmt,
export, and the language server's handlers (analysis, hover, definition, completion, outline,
formatting, called as the server calls them); and those past the front end (fuzz_deep.py):
forecasts where Seer's rules choose, margins with params in any field, diff between git
revisions, rank logs and traces diagnosed, runs tables forecast (fuzz_runs.py), and edit/cancel
sequences against a running language server. Inputs are mutations of the seeds (fuzz_common.py: the fuzz seed of test_fuzz.py, a
training job, every example and every example of the docs) by the strategies of test_fuzz.py
plus numbers at their extremes (1e308, 1e-300, 2^53 + 1, ...), unit exponents (`kW^12`),
unicode and splices of one seed into another.

The invariant: the command exits 0, 1 or 2; no E000 and no traceback; every input within TIME_S
seconds of CPU (the campaign's process: the machine may be loaded, so a wall-clock limit would
count the other work) and WALL_S seconds of wall time (an input that waits instead of
computing), and, in a campaign, the process within MEMORY_BYTES; fmt is idempotent and
meaning-preserving (the same diagnostics, by code, before and after). A failure's class is its
target and the kind of failure with numbers blanked out.

    python tests/fuzzing.py                       # 100,000 inputs across the targets (`make fuzz`)
    python tests/fuzzing.py --inputs 2000 --seed 7 --targets check,fmt
    python tests/fuzzing.py --inputs 20000 --targets deep                 # `make fuzz-deep`

prints a table per target (inputs, failing inputs, classes, CPU seconds of the campaign's own
process) and the classes found, each with its count and its shortest input (written to --out,
default fuzz-findings/), and exits 1 when it found any. tests/test_fuzz_targets.py runs
a few hundred inputs of every target with a fixed seed inside `make test`."""
from __future__ import annotations

import argparse
import contextlib
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

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
from fuzz_common import (JOB_SEED, MEMORY_BYTES, REPO, SEEDS, TIME_S, WALL_S, Failure,  # noqa: E402,F401
                         _cli, _first_error, mutate)
import fuzz_deep  # noqa: E402  (the targets past the front end)

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

    from astral_dsl.lsp import features
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
            features.hover(a, "utf-16", pos)
            features.declaration(a, "utf-16", pos)
        features.completion(a if a.parsed else None, text, "utf-16", pos)
    features.symbols(a.entry.tree if a.parsed else None, text, "utf-16")
    features.formatting(text, uri, "utf-16")


TARGETS: Dict[str, Callable[[Path, str, random.Random], None]] = {
    "check": _cli_target("check", "--format", "json", "{file}"),
    "size": _cli_target("size", "{file}"),
    "forecast": _cli_target("forecast", "{file}"),
    "render": _render,
    "fmt": _fmt,
    "export": _cli_target("export", "{file}"),
    "lsp": _lsp,
}
DEEP = list(fuzz_deep.TARGETS)        # `make fuzz-deep`: forecast-rule, margins, diff-rev, ...
TARGETS.update(fuzz_deep.TARGETS)


class _Timeout(BaseException):
    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _alarm(signum, frame):
    raise _Timeout(f"over {TIME_S} s of CPU" if signum == signal.SIGPROF else
                   f"over {WALL_S} s of wall time")


@contextlib.contextmanager
def _limited():
    """TIME_S seconds of this process's CPU (user + system: ITIMER_PROF) and WALL_S seconds
    of wall time for one input."""
    signal.setitimer(signal.ITIMER_PROF, TIME_S)
    signal.setitimer(signal.ITIMER_REAL, WALL_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


def _class(target: str, exc: BaseException) -> str:
    if isinstance(exc, _Timeout):
        kind = exc.what
    elif isinstance(exc, MemoryError):
        kind = "out of memory"
    elif isinstance(exc, Failure):
        kind = str(exc)
    else:
        kind = f"{type(exc).__name__}: {exc}"
    return f"{target}: " + re.sub(r"\d+", "N", kind)[:200]


def campaign(inputs: int, seed: int, targets: Optional[List[str]] = None,
             folder: Optional[Path] = None,
             stats: Optional[Dict[str, List[float]]] = None) -> Dict[str, List[str]]:
    """`inputs` fuzzed inputs spread evenly over `targets`; {class: [inputs that hit it]}.
    `stats` gets, per target, [inputs, inputs that failed, seconds of CPU of this process]."""
    rng = random.Random(seed)
    names = targets or list(TARGETS)
    work = Path(tempfile.mkdtemp(prefix="astral_fuzz_")) if folder is None else folder
    (work / "astral.toml").write_text("")
    path = work / "fuzz.astral"
    found: Dict[str, List[str]] = {}
    stats = {} if stats is None else stats
    previous = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    try:
        for k in range(inputs):
            target = names[k % len(names)]
            text = mutate(rng, rng.choice(SEEDS))
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            row = stats.setdefault(target, [0, 0, 0.0])
            row[0] += 1
            cpu = time.process_time()
            try:
                with _limited():
                    TARGETS[target](path, text, rng)
            except (Exception, _Timeout, MemoryError) as exc:   # noqa: BLE001 - classified
                # the input the target ran: what it last wrote to `path` (a deep target makes
                # its own from the generator, fuzz_deep.py), else the campaign's
                found.setdefault(_class(target, exc), []).append(
                    path.read_text(encoding="utf-8", errors="surrogatepass")
                    if path.exists() else text)
                row[1] += 1
            finally:
                row[2] += time.process_time() - cpu
    finally:
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])
        fuzz_deep.close()
        if folder is None:
            shutil.rmtree(work, ignore_errors=True)
    return found


def report(found: Dict[str, List[str]], inputs: int, seconds: float,
           out: Optional[Path] = None, stats: Optional[Dict[str, List[float]]] = None) -> str:
    lines = [f"{inputs:,} inputs in {seconds:.0f} s; {len(found)} class(es) of failure found"]
    if stats:
        lines.append(f"  {'target':<14} {'inputs':>8} {'failing':>8} {'classes':>8} {'CPU s':>8}")
        for target, (n, failing, cpu) in sorted(stats.items()):
            classes = sum(1 for c in found if c.startswith(target + ":"))
            lines.append(f"  {target:<14} {n:>8,} {failing:>8,} {classes:>8} {cpu:>8.0f}")
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
    p.add_argument("--targets", default=",".join(TARGETS),
                   help="comma-separated targets, or `deep` for " + ",".join(DEEP))
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    p.add_argument("--first", type=int, default=0,
                   help="start at this input of the campaign (a multiple of 1,000: run a long "
                        "campaign in pieces, each the inputs the whole run would try)")
    args = p.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, resource.getrlimit(resource.RLIMIT_AS)[1]))
    names = [t for t in args.targets.split(",") if t]
    if names == ["deep"]:
        names = DEEP
    unknown = set(names) - set(TARGETS)
    if unknown:
        p.error(f"unknown targets {sorted(unknown)}; choose from {', '.join(TARGETS)}")
    start = time.monotonic()
    found: Dict[str, List[str]] = {}
    stats: Dict[str, List[float]] = {}
    per_chunk = 1000            # progress on standard error every 1,000 inputs
    if args.first % per_chunk:
        p.error("--first must be a multiple of 1,000")
    for first in range(args.first, args.first + args.inputs, per_chunk):
        n = min(per_chunk, args.first + args.inputs - first)
        for cls, texts in campaign(n, args.seed * 1_000_003 + first, names,
                                   stats=stats).items():
            if cls not in found:
                print(f"new class: {cls}", file=sys.stderr)
            found.setdefault(cls, []).extend(texts)
        print(f"{first + n:,} inputs, {len(found)} class(es)", file=sys.stderr)
    print(report(found, args.inputs, time.monotonic() - start, args.out, stats))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
