"""`astral ARGS` for the tests, one helper for every test file.

By default the command runs in this process: `astral_dsl.cli.main(args)` with the working
directory, the environment, standard input and the output streams swapped for the call (the
streams are pipes to the command: not terminals, UTF-8, with a binary `.buffer` as a process's
have). That is the program's code path without its ~0.3 s of start-up per call, which most of the
suite's CPU went to. `process=True` starts a real `python -m astral_dsl.cli`: for what only a
process shows (a hash seed, the interpreter's exit, a terminal, start-up itself, limits on the
process); conftest.py puts this checkout first on its PYTHONPATH. `astral_runs` runs several
commands in one new process, each as in this process: where a process is needed (a hash seed)
but not one per command.

Either way the result is a `subprocess.CompletedProcess` with `returncode`, `stdout` and
`stderr` (text, or bytes with `text=False`)."""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Union

REPO = Path(__file__).resolve().parents[1]


def astral(*args: str, cwd: Union[str, Path, None] = REPO, env: Optional[Mapping[str, str]] = None,
           input: Union[str, bytes, None] = None, text: bool = True, timeout: float = 600,
           process: bool = False) -> subprocess.CompletedProcess:
    """`astral ARGS`: its exit code and output. `env` replaces the environment for the call (as
    subprocess's does); `input` is standard input; `timeout` bounds a process only."""
    args = [str(a) for a in args]
    if process:
        data = input.encode() if isinstance(input, str) and not text else input
        return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *args], cwd=cwd, env=env,
                              input=data, capture_output=True, text=text, timeout=timeout)
    from astral_dsl.cli import main

    stdin = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    out, err = _pipe(), _pipe()
    with _environment(env), contextlib.chdir(cwd or os.getcwd()), \
            _streams(_pipe(stdin), out, err):
        try:
            code = main(args)
        except SystemExit as exc:          # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(["astral", *args], code, _read(out, text), _read(err, text))


# What astral_runs' process runs: each command as `astral` below runs one in this process, its
# exit code and output (base64) a line of JSON on the process's own standard output.
_RUNS = """import base64, json, sys
sys.path.insert(0, {tests!r})
from clirun import astral
for args in json.loads(sys.stdin.read()):
    p = astral(*args, cwd=None, text=False)
    print(json.dumps([p.returncode, base64.b64encode(p.stdout).decode(),
                      base64.b64encode(p.stderr).decode()]))
"""


def astral_runs(commands: Sequence[Sequence[str]], cwd: Union[str, Path] = REPO,
                env: Optional[Mapping[str, str]] = None, timeout: float = 600
                ) -> List[subprocess.CompletedProcess]:
    """Several `astral ARGS`, in order, in one new process (a real `python`; each command as
    `astral` runs one in this process, output in bytes): for what needs a process of its own
    but not one per command. The determinism tests compare each command's output under two
    hash seeds: a process per seed, not a process per command and seed (~0.2 s of CPU a
    start, 22 of them)."""
    commands = [[str(a) for a in args] for args in commands]
    proc = subprocess.run([sys.executable, "-c", _RUNS.format(tests=str(Path(__file__).parent))],
                          cwd=cwd, env=env, input=json.dumps(commands), capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"astral_runs: exit {proc.returncode}: {proc.stderr[-2000:]}")
    lines = proc.stdout.splitlines()
    assert len(lines) == len(commands), proc.stdout[-2000:]
    out = []
    for args, line in zip(commands, lines):
        code, stdout, stderr = json.loads(line)
        out.append(subprocess.CompletedProcess(["astral", *args], code,
                                               base64.b64decode(stdout), base64.b64decode(stderr)))
    return out


def _pipe(data: bytes = b"") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict",
                            line_buffering=False, write_through=True)


def _read(stream: io.TextIOWrapper, text: bool) -> Union[str, bytes]:
    stream.flush()
    data = stream.buffer.getvalue()
    if not text:
        return data
    # what subprocess's text mode does: decode, and read \r\n and \r as \n
    return data.decode("utf-8", errors="strict").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _streams(stdin, stdout, stderr):
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _environment(env: Optional[Mapping[str, str]]):
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


__all__ = ["REPO", "astral", "astral_runs"]
