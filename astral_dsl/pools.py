"""What every local process pool of the package shares (a sweep's and a search's workers,
explore/engines.py; the readers of observed files, observe/load.py): Ctrl-C is the parent's.

A terminal sends SIGINT to the whole process group. A worker interrupted inside its result
queue's lock kept it, then waited for it to send its KeyboardInterrupt back; the other workers
and the pool's shutdown (which waits for the workers) waited for ever: `astral sweep` hung after
a Ctrl-C. So the workers ignore SIGINT (`worker_started`, the pool's initializer), and the
interrupted parent stops them where they are (`terminate`) instead of waiting for their work."""
from __future__ import annotations


def worker_started() -> None:
    """A pool's initializer: the worker leaves Ctrl-C to the process that started it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def terminate(pool) -> None:
    """Stop a concurrent.futures ProcessPoolExecutor's workers now (SIGTERM) and drop its
    pending work, without waiting for what they are doing (a chunk may take minutes)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, AttributeError, ValueError):      # already gone
            pass
    pool.shutdown(wait=False, cancel_futures=True)
