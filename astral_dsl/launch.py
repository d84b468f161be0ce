"""The `astral` program's first line (the console script, pyproject.toml [project.scripts], and
`python -m astral_dsl.cli`): from here on a Ctrl-C exits 130 and writes nothing. The command
line's modules come after it: a KeyboardInterrupt while they were imported printed Python's
traceback (a Ctrl-C in the first ~30 ms). Once cli.main runs, its own handler takes over and
puts this one back as it returns (for the program's exit).

Nothing but the interpreter's `_signal` is imported before the handler is in place (`signal`
imports enum); `import astral_dsl`, which comes first, imports nothing."""
import _signal


def interrupted(signum, frame) -> None:
    """Ctrl-C before (or after) the command: nothing has been written that a flush would
    complete, and nothing would say more than the exit code."""
    import os

    os._exit(130)          # cli.EXIT_INTERRUPTED: 128 + SIGINT, as a shell reports it


def main() -> None:
    # a SIGINT the parent ignores (a background job, nohup) stays ignored: Python leaves
    # SIG_IGN in place of its default handler then
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, interrupted)
    from astral_dsl.cli import entry

    entry()


if __name__ == "__main__":        # python -m astral_dsl.launch, as the `astral` script runs it
    main()
