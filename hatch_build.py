"""Build hook: compiles the trace reader's C road (astral_dsl/observe/_tracescan.c with the vendored
yyjson) into an extension module, with the interpreter's own compiler settings (sysconfig).

An editable install (`pip install -e .`, what `make install` does) builds it in place, beside
its source, where the checkout's package finds it; a wheel carries it. The module records the
SHA-256 of the sources it was built from, and astral_dsl/observe/native.py uses it only while
those sources are unchanged (a checkout edited since its install reads traces on the Python
road until it is reinstalled). Without a C compiler the install goes on without it, and traces
are read on the Python road (slower, the same results); the hook says so."""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sysconfig
import tempfile

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:          # `python hatch_build.py` outside a build: compile in place only
    BuildHookInterface = object

SOURCES = ("astral_dsl/observe/_tracescan.c", "astral_dsl/_vendor/yyjson/yyjson.c",
           "astral_dsl/_vendor/yyjson/yyjson.h")
MODULE = "astral_dsl/observe/_tracescan"


def source_digest(root: str) -> str:
    """The SHA-256 over the sources, in SOURCES order (native.py computes the same)."""
    h = hashlib.sha256()
    for rel in SOURCES:
        with open(os.path.join(root, rel), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def compile_module(root: str, out: str) -> None:
    """Compile and link the module to `out` (raises CalledProcessError, OSError)."""
    link = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")
    include = sysconfig.get_paths()["include"]
    cmd = link + ["-O2", "-fPIC", "-DNDEBUG", f"-DASTRAL_SOURCE_SHA256=\"{source_digest(root)}\"",
                  f"-I{include}", os.path.join(root, SOURCES[0]), os.path.join(root, SOURCES[1]),
                  "-o", out]
    subprocess.run(cmd, check=True, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class CompiledReader(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        root = self.root
        if version == "editable":
            out = os.path.join(root, MODULE + suffix)
        else:
            out = os.path.join(tempfile.mkdtemp(prefix="astral-build-"),
                               os.path.basename(MODULE) + suffix)
        try:
            compile_module(root, out)
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            self.app.display_warning(
                "astral_dsl: the compiled trace reader was not built (" + str(exc).strip() +
                "; " + detail.decode("utf-8", "replace").strip()[-400:] + "): profiler "
                "traces will be read on the Python road, 3-4x slower, with the same results. "
                "Install a C compiler (gcc) and reinstall to build it.")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            build_data["force_include"][out] = MODULE + suffix


if __name__ == "__main__":   # rebuild in place after editing the C sources: python hatch_build.py
    here = os.path.dirname(os.path.abspath(__file__))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    compile_module(here, os.path.join(here, MODULE + suffix))
    print("built", MODULE)
