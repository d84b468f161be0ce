"""The `astral` command line: one module per command, each with NAME, HELP, register(sub) and
run(args, overrides) -> exit code. A new command is a module here and a line in COMMANDS."""
from __future__ import annotations

import errno
import importlib
import io
import os
import sys
from typing import List, Optional

from astral_dsl.cli import option_paths
from astral_dsl.cli.common import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Parser, UsageError, \
    internal_document, sets, usage, usage_as_json, usage_names

COMMANDS = ["check", "size", "export", "fmt", "lsp", "render", "forecast", "sweep", "search",
            "diagnose", "synth", "report", "diff", "runs", "calibrate"]


def _modules():
    return [importlib.import_module(f"astral_dsl.cli.{name}") for name in COMMANDS]


def build_parser(argv: Optional[List[str]] = None) -> Parser:
    """The command line's parser. Given the arguments, only the command they name registers
    its options (a command's `register` may import what its choices list: the picture views,
    graphviz); the others are listed by name and help, which is all `astral --help` shows."""
    from astral_dsl import __version__

    # without arguments, every command registers (the whole parser, for tools); with them, at
    # most the one they name, and only its module is imported: the others are listed by name
    # (their help shows only in `astral --help`, which names no command: nothing registers)
    chosen = _command_in(argv) if argv is not None else None
    p = Parser(prog="astral", description="Compile and check .astral datacenter designs.")
    p.add_argument("--version", action="version", version=f"astral {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    p.set_defaults(_commands=sub)
    if argv is not None and chosen is not None:
        # the others by name only: one parser stands for them all, as none of them parses
        # (a parser per command cost ~0.12 ms, gettext looking for translations three times)
        listed = Parser(prog="astral", add_help=False)
        for name in COMMANDS:
            if name == chosen:
                importlib.import_module(f"astral_dsl.cli.{name}").register(sub)
            else:
                sub.choices[name] = listed
        return p
    for module in _modules():
        if argv is None:
            module.register(sub)
        else:
            sub.add_parser(module.NAME, help=module.HELP)
    return p


def _command_in(argv: List[str]) -> Optional[str]:
    """The command the arguments name (their first word that is not an option), if any."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


# Released when memory runs out, so that the report below can still be written; the report
# itself is preformatted bytes written straight to the file descriptor. Bytes, not a bytearray:
# zeroed by calloc, their pages are not touched until used (a bytearray's 4 MiB are written:
# 1,025 page faults, 3 ms of CPU at every start), and what runs out (the address space of a
# limit such as RLIMIT_AS) is freed all the same.
_RESERVE: Optional[bytes] = None
_OUT_OF_MEMORY = (b"error[E000]: out of memory: astral_dsl should have stopped this input with a "
                  b"diagnostic before\n = note: this is a bug in astral_dsl, not in your design; "
                  b"please report it with the input file\n")


def main(argv: Optional[List[str]] = None) -> int:
    global _RESERVE
    _RESERVE = bytes(4 << 20)
    _closed_streams()
    restore = _escaping_streams()
    stdout = sys.stdout = _PipeSafe(sys.stdout)
    try:
        return _main(argv)
    except MemoryError:
        _RESERVE = None
        sys.exc_info()[1].__traceback__ = None       # drop the frames holding the memory
        try:
            os.write(2, _OUT_OF_MEMORY)
        except OSError:
            pass
        return EXIT_INTERNAL
    finally:
        _RESERVE = None
        if sys.stdout is stdout:
            sys.stdout = stdout.stream
        for stream, errors in restore:
            _reconfigure(stream, errors)


class _PipeSafe:
    """Standard output that outlives its reader (`astral check x | head -1`): once the pipe is
    closed, what is written goes to /dev/null instead of raising BrokenPipeError midway, so the
    command finishes and exits with its verdict (1 when the design has errors, for a CI's
    `set -o pipefail`), not 0 for an interrupted write. Everything else is the stream's."""

    def __init__(self, stream):
        self.stream = stream
        self.written = False        # anything written (a usage error's JSON then adds none)
        self.gone = False           # its reader closed the pipe (_reader_gone)

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._closed()
            return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._closed()

    def _closed(self) -> None:
        # /dev/null on the descriptor: the buffered rest and every later write go there
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.stream.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass            # a stream without a descriptor: each write is dropped as it fails

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _reader_gone(stdout) -> bool:
    """Whether a BrokenPipeError is standard output's, its reader gone (`astral export x |
    head -1`, raised by a write that bypassed _PipeSafe, to its binary buffer): the command's
    output was cut where the reader wanted it, exit 0. Any other pipe's (the input of a `dot`
    that stopped reading: `astral render` exited 0, writing nothing and saying nothing) is not.
    A pipe whose reader is gone polls as POLLERR, a socket whose peer closed as POLLHUP (Linux);
    where poll says nothing of it, or there is no poll, taken as standard output's, as before."""
    import select
    import stat

    if getattr(stdout, "gone", False):
        return True
    try:
        fd = stdout.fileno()
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return False        # a file, a terminal, /dev/null: no reader to lose
        poller = select.poll()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return True
    poller.register(fd, 0)
    if any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
        return True
    return not sys.platform.startswith("linux")


def _closed_streams() -> None:
    """Standard output or error closed (`astral check x >&-`: Python's sys.stdout is None):
    what would go there is dropped, as into /dev/null, and the exit code still says it all."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


_ESCAPE = "astral-escape"


def _escape(exc: UnicodeError, raw_bytes: bool = False):
    """What a stream that cannot encode a character writes instead: `\\u00b5` (a pair of
    escapes past U+FFFF), which a terminal shows as text and JSON reads as the same character;
    a design's names, messages and files may hold any character, an ASCII terminal (a C locale
    without UTF-8, PYTHONIOENCODING=ascii) none of them. With `raw_bytes` (a stream that had
    Python's `surrogateescape`), a byte a file name could not decode is written back as it was."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    if raw_bytes and all(0xDC80 <= ord(ch) <= 0xDCFF for ch in text):
        return bytes(ord(ch) - 0xDC00 for ch in text), exc.end
    out = []
    for ch in text:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}")
        else:
            out.append(f"\\u{c:04x}")
    return "".join(out), exc.end


def _escaping_streams():
    """Standard output and error escape what their encoding cannot hold (_escape) instead of
    raising UnicodeEncodeError; the streams and their former error handlers, to restore."""
    import codecs

    codecs.register_error(_ESCAPE, _escape)
    codecs.register_error(_ESCAPE + "-bytes", lambda exc: _escape(exc, raw_bytes=True))
    changed = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        handler = {"strict": _ESCAPE, "surrogateescape": _ESCAPE + "-bytes"}.get(errors)
        if handler is not None and _reconfigure(stream, handler):
            changed.append((stream, errors))
    return changed


def _reconfigure(stream, errors: str) -> bool:
    try:
        stream.reconfigure(errors=errors)
        return True
    except (AttributeError, ValueError, OSError):   # not a TextIOWrapper, or closed
        return False


def entry() -> None:
    """The `astral` program (the console script and `python -m astral_dsl.cli`): main(), then an
    exit without the interpreter's teardown. Freeing every object of a compiled design one by
    one costs ~60 ms of CPU at the end of an `astral check` of the reference, for nothing: the
    exit handlers run and the output is flushed first, and when a thread is still running the
    exit is the ordinary one (which waits for it)."""
    import atexit
    import threading

    code = main()
    if threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):    # a closed pipe (`astral ... | head`): nothing to say
            pass
    os._exit(code if isinstance(code, int) else EXIT_INTERNAL)


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}   # a disk or a quota full, a file too large
EXIT_INTERRUPTED = 130          # 128 + SIGINT, as a shell reports a job Ctrl-C stopped
_interrupted = False


def _on_interrupt(signum, frame):
    """Python's own SIGINT handler (KeyboardInterrupt), remembering that it ran: a library
    interrupted in an import may turn the KeyboardInterrupt into another error (numpy: "Importing
    the numpy C-extensions failed"), which is still the user's Ctrl-C, not a bug."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _main(argv: Optional[List[str]]) -> int:
    import signal
    import threading

    global _interrupted
    _interrupted = False
    # Python's handler, or the program's first one (astral_dsl/launch.py: exit 130), which is
    # put back for the exit; not an ignored SIGINT
    previous = signal.getsignal(signal.SIGINT)
    launch = sys.modules.get("astral_dsl.launch")
    installed = threading.current_thread() is threading.main_thread() and (
        previous is signal.default_int_handler
        or (launch is not None and previous is launch.interrupted))
    if installed:
        signal.signal(signal.SIGINT, _on_interrupt)
    usage_as_json(None)
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(words)
        usage_as_json(_json_usage(parser, words))
        args, extra = parser.parse_known_args(argv)
        files = getattr(args, "files", None) or ()
        usage_names(getattr(args, "file", None) or getattr(args, "table", None)
                    or (files[0] if len(files) == 1 else None))
        if extra:               # told by the command's parser: its usage lists what it takes
            args._commands.choices[args.command].error(
                f"unrecognized arguments: {' '.join(extra)}")
        try:
            overrides = sets(args)
        except UsageError as exc:
            return usage(str(exc))
        if args.command != "fmt" and _reads_stdin(args):
            return usage("`-` (standard input): only `astral fmt` reads it; give the file of "
                         "the design or runs table (`./-` for a file named `-`)")
        empty = option_paths.empty(args)
        if empty is not None:
            return usage(f"{empty}: the path is empty: it names no file")
        unnamed = option_paths.empty_name(args)
        if unnamed is not None:
            return usage(unnamed)
        dash = option_paths.writes_dash(args)
        if dash is not None:
            what = "folder" if dash == "--netbox" else "file"
            return usage(f"{dash} -: {dash} names the {what} it writes, and `-` is not standard "
                         f"output: name the {what} (`./-` for one named `-`)")
        nowhere = option_paths.nowhere(args)
        if nowhere is not None:
            return usage(nowhere)
        command = importlib.import_module(f"astral_dsl.cli.{args.command}")
        code = command.run(args, overrides)
        sys.stdout.flush()          # here, so that a full disk is told as below
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:
        if _reader_gone(sys.stdout):
            return EXIT_OK
        _internal_error(exc)          # another pipe's: a `dot` that stopped reading its input
        return EXIT_INTERNAL
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if _interrupted:
            return EXIT_INTERRUPTED
        if isinstance(exc, OSError) and exc.errno in _FULL:     # only a write fails so
            return usage(f"cannot write the output: {exc.strerror}")
        _internal_error(exc)
        return EXIT_INTERNAL
    finally:
        usage_as_json(None)
        if installed:
            signal.signal(signal.SIGINT, previous)


def _json_usage(parser: Parser, words: List[str]):
    """The fields of a usage error's JSON document (common.usage_as_json) when the words give
    the command they name `--format json` or `jsonl` (or it is its default, as `astral
    export`'s) and it takes that format, else None. Read before the words are parsed:
    argparse's own errors (a missing FILE, a bad choice) come before the format is known.
    `--format=json` and an abbreviation (`--form json`) count, as argparse reads them."""
    command = _command_in(words)
    if command is None:
        return None
    chosen = parser.get_default("_commands").choices.get(command)
    action = next((a for a in getattr(chosen, "_actions", ()) if a.dest == "format"), None)
    if action is None:
        return None
    module = importlib.import_module(f"astral_dsl.cli.{command}")
    takes, value = action.choices or (), action.default
    if value is None and hasattr(module, "default_format"):    # `astral export`'s
        value = module.default_format(words)
    for i, word in enumerate(words):
        if word == "--":
            break
        name, equals, rest = word.partition("=")
        if len(name) >= 4 and "--format".startswith(name):
            value = rest if equals else (words[i + 1] if i + 1 < len(words) else None)
    if value not in ("json", "jsonl") or value not in takes:
        return None
    return dict(getattr(module, "usage_json", dict)())


def _reads_stdin(args) -> bool:
    """Whether a command's design or runs table is named `-` (standard input, by convention)."""
    for name in ("file", "files", "a", "b", "table", "tables"):
        value = getattr(args, name, None)
        if value == "-" or (isinstance(value, list) and "-" in value):
            return True
    return False


def _internal_error(exc: Exception) -> None:
    try:
        from astral_dsl.outputs.terminal import printable

        text = (f"error[E000]: internal compiler error: {type(exc).__name__}: {printable(exc)}\n"
                " = note: this is a bug in astral_dsl, not in your design; please report it "
                "with the input file\n")
    except BaseException:  # noqa: BLE001 - describing the error failed too: say it plainly
        text = "error[E000]: internal compiler error\n"
    sys.stderr.write(text)
    try:            # with --format json, the envelope with E000 on standard output too
        internal_document(text.partition("\n")[0].partition(": ")[2])
    except Exception:  # noqa: BLE001 - as above: the exit code (3) still says it
        pass
    if os.environ.get("ASTRAL_DEBUG"):
        import traceback

        traceback.print_exception(exc)


__all__ = ["COMMANDS", "EXIT_USAGE", "build_parser", "entry", "main"]
