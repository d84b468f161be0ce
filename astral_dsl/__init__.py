"""astral_dsl: a declarative digital-twin language for AI-training datacenters.

    >>> import astral_dsl
    >>> result = astral_dsl.check("examples/astral.astral")      # `astral check`'s verdict
    >>> result.valid, result.totals.it_power.to("MW")

The functions and types are those of astral_dsl/api/ (docs/api.md): `load`, `loads`,
`compile`, `compiles`, `check`, `size`, `forecast`, `diagnosis`, `sweep`, `search`,
`margins`, `report`, `diff`, `score_runs`, `summary`, and the results they return, imported
on first use: `import astral_dsl` alone (as `astral --help` does) imports nothing else."""

# not typing's: importing it (and re, enum) took ~10 ms before the program's Ctrl-C handling
# (astral_dsl/launch.py) could start; type checkers read this name as typing's
TYPE_CHECKING = False

__version__ = "0.1.0"

# the API's names (a literal list, so that type checkers read what is exported)
__all__ = ["__version__", "Checked", "Chosen", "Design", "DiagnoseError", "Diagnosis",
           "Diagnostic", "DiffResult", "ForecastError", "ForecastResult", "Instance",
           "MarginsReport", "ParamValue", "Quantity", "ReviewError", "RunsResult",
           "SearchError", "SearchResult", "Severity", "Sized", "Span", "SweepError",
           "SweepResult", "Target", "Totals", "UnitError", "UnitSpecError", "Workspace", "check",
           "check_file", "compile", "compiles", "diagnosis", "diff", "forecast",
           "front_end_errors", "load", "loads", "margins", "report", "score_runs", "search",
           "size", "summary", "sweep"]
_API = frozenset(__all__[1:])

if TYPE_CHECKING:          # what a type checker sees: the API's own names and types
    from astral_dsl.api import (Checked, Chosen, Design, DiagnoseError, Diagnosis, Diagnostic,
                                DiffResult, ForecastError, ForecastResult, Instance,
                                MarginsReport, ParamValue, Quantity, ReviewError, RunsResult,
                                SearchError, SearchResult, Severity, Sized, Span, SweepError,
                                SweepResult, Target, Totals, UnitError, UnitSpecError, Workspace,
                                check, check_file, compile, compiles, diagnosis, diff, forecast,
                                front_end_errors, load, loads, margins, report, score_runs,
                                search, size, summary, sweep)


def __getattr__(name: str) -> object:
    if name in _API:
        from astral_dsl import api

        return getattr(api, name)
    raise AttributeError(f"module 'astral_dsl' has no attribute {name!r}")


def __dir__() -> list:
    """The API's names too (an editor's or a shell's completion), though imported on use."""
    return sorted(set(globals()) | _API)

