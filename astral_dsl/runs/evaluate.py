"""Forecast every row of a runs table: express it (express.py), compile it, validate its job as
`astral check` does, forecast it as `astral forecast` does, score it (score.py).

`prepare(table)` does the first three once per configuration (configs.py: the rows of one are
renamed copies of its first; the calibration forecasts each row many times with other
constants); `evaluate(prepared, calibration)` forecasts and scores."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.runs import score
from astral_dsl.runs.configs import configurations, named, renamed, shape
from astral_dsl.runs.express import Expressed, NotExpressible, column_of, express
from astral_dsl.runs.left_out import left_out
from astral_dsl.seer.regime import regime


@records.frozen
class Prepared:
    row: object
    status: str                      # ok | not_expressible | rejected
    reason: str = ""
    field: str = ""
    spec: object = None
    gpu: object = None
    net: object = None
    expressed: Optional[Expressed] = None
    notes: Tuple[str, ...] = ()

    @property
    def regime(self):
        return regime(self.spec, self.gpu.name) if self.spec is not None else None


@records.frozen
class Result:
    prepared: Prepared
    metric: Optional[str]
    published: Optional[float]
    forecast: Optional[float] = None
    error: Optional[float] = None
    iteration_time: Optional[float] = None
    chosen: Tuple = ()
    memory: Optional[float] = None
    notes: Tuple[str, ...] = ()
    job: object = None               # the JobSpec forecast: the rule's choices made
    # the error with the row's configuration left out of the shipped fit (left_out.py): None
    # for another fit's constants or a row that is not one of the shipped fit's
    left_out: Optional[float] = None

    @property
    def row(self):
        return self.prepared.row

    @property
    def status(self) -> str:
        return self.prepared.status


@records.frozen
class Checked:
    """What compiling an expression and validating its job found: why it cannot be forecast
    (`error`, its column `field`) or the job (`spec`, `cluster`, the memory check's `notes`)."""
    error: str = ""
    field: str = ""
    spec: object = None
    cluster: object = None
    notes: Tuple[str, ...] = ()


def prepare_row(row, systems=None, known=None) -> Prepared:
    """`row` expressed, compiled and validated; `known`: the checks of the rows prepared before
    it (prepare's), which a row of the same configuration takes, renamed (configs.py)."""
    e = express(row, systems)
    if isinstance(e, NotExpressible):
        status = "rejected" if row.problems else "not_expressible"
        return Prepared(row, status, e.reason, e.field)
    c = _check(e, row) if known is None else _known(e, row, known)
    if c.error:
        return Prepared(row, "not_expressible", c.error, c.field, expressed=e)
    impossible = score.beyond_peak(row, c.spec, c.cluster.gpu)
    if impossible is not None:       # not scored, nor fitted on
        return Prepared(row, "not_expressible", impossible, score.published(row)[0],
                        expressed=e)
    return Prepared(row, "ok", spec=c.spec, gpu=c.cluster.gpu, net=c.cluster.net, expressed=e,
                    notes=c.notes)


def _check(e: Expressed, row) -> Checked:
    from astral_dsl import seer
    from astral_dsl.workspace import Workspace

    design = Workspace.of_text(e.source, label(row), e.root or None).design
    errors = [d for d in design.diagnostics if d.is_error]
    if errors:       # a design too large (E405): the blocks the row's GPUs need, its `gpus`
        return Checked(f"{errors[0].code}: {errors[0].message}",
                       "gpus" if errors[0].code == "E405" else column_of(e, errors[0], "model"))
    job = seer.find_job(design, e.job)
    diags, spec, cluster = seer.validate_job(design, job)
    hard = [d for d in diags if d.is_error and d.code != "E757"]
    if hard or spec is None or cluster is None:
        d = hard[0] if hard else None
        return Checked(f"{d.code}: {d.message}" if d else "the job cannot be forecast",
                       column_of(e, d, "layout") if d else "layout")
    # the memory check's verdicts travel with the forecast: a row the estimate says does not
    # (E757) or may not (W750) fit ran with memory savings it does not state, or the estimate
    # is off for it
    return Checked(spec=spec, cluster=cluster,
                   notes=tuple(d.message for d in diags if d.code in ("E757", "W750")))


def label(row) -> str:
    """The name a row's expression is compiled under (its diagnostics' file)."""
    return f"<runs row {row.id}>"


def _known(e: Expressed, row, known: Dict) -> Checked:
    """`e` checked as the first row of its configuration was (`known`: shape -> that row's job
    name, label and check), renamed to its own job; checked itself when it is the first, or
    when a message names the first row's job or label otherwise than configs.renamed can
    rename."""
    key = shape(e)
    if key is None:
        return _check(e, row)
    if key not in known:
        known[key] = (e.job, label(row), _check(e, row))
        return known[key][2]
    name, where, c = known[key]
    texts = [renamed(t, name, e.job, where) for t in (c.error,) + c.notes]
    if any(t is None for t in texts):
        return _check(e, row)
    return attrs.evolve(c, error=texts[0], notes=tuple(texts[1:]),
                        spec=None if c.spec is None else attrs.evolve(c.spec, name=e.job))


def prepare(table, systems=None) -> List[Prepared]:
    """Each row prepared (prepare_row), each configuration compiled and validated once: a
    table of one run repeated costs one compile."""
    known: Dict = {}
    return [prepare_row(row, systems, known) for row in table.runs]


def evaluate_one(p: Prepared, calibration=None, fc=None) -> Result:
    """`p` forecast and scored; `fc`: the forecast of its configuration (configs.py), when
    another row of it was forecast already."""
    from astral_dsl.seer.forecast import run

    if _unread(p):
        return Result(p, None, None)      # its cells do not line up with the columns: none is read
    metric, value = score.published(p.row)
    if p.status != "ok":
        return Result(p, metric, value)
    fc = fc or run(p.spec, p.gpu, p.net, calibration=calibration)
    t, job = fc.iteration_time, named(fc.job, p.spec.name)
    # a row that publishes no figure is forecast in tokens/s per GPU, with nothing to score
    shown = metric or "tokens_per_s_per_gpu"
    f = score.forecast_metric(shown, p.row, job, t)
    err = score.signed_error(metric, f, value) if metric else None
    out = left_out(p.row, calibration) if err is not None else None
    return Result(p, shown, value, f, err, t, fc.chosen, fc.memory.total, p.notes, job, out)


def _unread(p: Prepared) -> bool:
    """Its cells do not line up with the columns."""
    return any(field == "row" for field, _ in p.row.problems)


def evaluate(prepared: List[Prepared], calibration=None) -> List[Result]:
    """Each row forecast and scored, each configuration (configs.py) forecast once: a table of
    one run repeated costs one forecast."""
    from astral_dsl.seer.forecast import run

    ok = [i for i, p in enumerate(prepared) if p.status == "ok" and not _unread(p)]
    config, first = configurations([prepared[i] for i in ok])
    forecasts = [run(prepared[ok[i]].spec, prepared[ok[i]].gpu, prepared[ok[i]].net,
                     calibration=calibration) for i in first]
    byrow = {i: forecasts[k] for i, k in zip(ok, config)}
    return [evaluate_one(p, calibration, byrow.get(i)) for i, p in enumerate(prepared)]
