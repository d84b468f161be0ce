"""Whether writing an output would destroy a file the command reads (`astral report x.astral
-o x.astral`, `astral diagnose ... --observed run.csv -o run.csv`): the refusal the command
line (cli/common.py written_over, a usage error) and the API (`astral_dsl.report`, a
ValueError) share."""
from __future__ import annotations

import os
import stat
from typing import Iterable, Optional


def clobbered(output: Optional[str], inputs: Iterable, folders: bool = False) -> Optional[str]:
    """What `output` is among the files read, `inputs` (paths; None or "-" skipped; with
    `folders`, a folder stands for the files in it, as --observed reads one, a link in it
    among them), when it is one of them by any path, link or hard link: "a file", "`x.astral`
    (the same file)", "a file of `runs/`". None when it names none of them, or does not exist
    yet."""
    try:
        out = os.stat(output) if output else None
        # the folder it is in, by its name and by where a link leads (--observed reads a link
        # of its folder: `-o DIR/link.csv` wrote over the log elsewhere the link was read from)
        places = [(os.stat(os.path.dirname(p)), os.path.basename(p)) for p in
                  dict.fromkeys((os.path.abspath(output), os.path.realpath(output)))] \
            if out else []
    except (OSError, ValueError):
        return None
    if out is None or not stat.S_ISREG(out.st_mode):
        return None
    for path in inputs:
        if not path or path == "-":
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        if os.path.samestat(st, out) or (folders and stat.S_ISDIR(st.st_mode) and any(
                os.path.samestat(st, folder) and not name.startswith(".")
                for folder, name in places)):
            return f"a file of `{path}`" if stat.S_ISDIR(st.st_mode) else \
                "a file" if str(path) == str(output) else f"`{path}` (the same file)"
    return None
