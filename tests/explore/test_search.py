"""`astral search`: its top k equal an exhaustive forecast of every configuration (brute force),
its bound never exceeds the forecast it bounds, its rules agree with Seer's validation, the
cost per token is the hand-computed one, and the CLI's outputs and usage errors."""
from __future__ import annotations

import csv
import itertools
import json
import textwrap
from pathlib import Path

import attrs
import pytest

from astral_dsl import seer
from astral_dsl.cli import main
import astral_dsl
from astral_dsl.explore import search
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.explore.search.bounds import screen_bound
from astral_dsl.explore.search.space import RULES, enumerate_space, split
from astral_dsl.explore.search.work import Setup, State, fitting
from astral_dsl.seer.job import job_spec
from astral_dsl.seer.stages import divisors

# two DGX-like hosts per rack, two racks: 32 H100s; a small dense model (6 layers: pp = 4
# splits them unevenly) and a small mixture of experts with unfused attention (selective
# recomputation is a choice there; context parallelism is not)
SMALL = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8, QM9700_NDR }

host Node = HGX8(gpu = H100_SXM, nic = CX7_400G) { price = 300000 USD }

model Tiny {
  layers = 6, hidden = 1024, heads = 8, kv_heads = 4, ffn = 4096, vocab = 32000, seq = 2048
  activation = swiglu
}
model TinyMoE {
  layers = 4, hidden = 1024, heads = 8, kv_heads = 8, ffn = 2048, vocab = 32000, seq = 2048
  experts = 4, top_k = 2, moe_ffn = 2048, dense_layers = 1, activation = swiglu
}

rack R { hosts = 2 x Node }
fabric F {
  rails = 8, planes = 1, max_oversubscription = 1
  tier leaf { switch = QM9700_NDR, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier core { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
site Lab { racks = 2 x R, fabric = F }

job dense {
  model = Tiny, placement = Lab, gpus = 16
  parallel { tp = 4, pp = 2, dp = 2, sp = true }
  batch { global_batch = 16, micro = 1, seq = 2048 }
}
job moe {
  model = TinyMoE, placement = Lab, gpus = 16, attention = unfused
  parallel { tp = 2, pp = 2, dp = 4, ep = 2 }
  batch { global_batch = 8, micro = 1, seq = 2048 }
}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("search") / "small.astral"
    path.write_text(textwrap.dedent(SMALL), encoding="utf-8")
    return path


def _state(path, job, gpus=()):
    return State(astral_dsl.load(str(path)), Setup((), job, tuple(gpus)))


_BRUTE = {}
_FORECASTS = {}


@attrs.frozen
class _Figures:
    """What these tests read of a forecast: kept in place of the Forecast, whose Lowering holds
    every operator template it priced (the module's thousands of forecasts kept their operators
    alive to the end of the test session: 628,570 measured)."""
    iteration_time: float
    tokens_per_s: float
    breakdown: dict


def _forecast(state, spec):
    """The figures of Seer's full forecast of a configuration's job `spec` (work.fitting's),
    made once per job spec and cluster: the brute force of each objective and the bounds' check
    forecast the same configurations (the dense job's whole space is part of the 8-or-16-GPU
    one)."""
    key = (spec, state.cluster.gpu, state.cluster.net)
    if key not in _FORECASTS:
        fc = seer.run(key[0], state.cluster.gpu, state.cluster.net)
        _FORECASTS[key] = _Figures(fc.iteration_time, fc.tokens_per_s, fc.breakdown)
    return _FORECASTS[key]


def _brute_force(state, score=None):
    """Every admitted configuration that fits in memory (where it does not as it is, each way
    work.fitting gives to make it fit forecast and the faster kept), forecast fully, ranked (by
    iteration time unless `score(config, seconds)` says otherwise)."""
    key = (state.job.template, state.space.gpus)
    if score is None and key in _BRUTE:
        return _BRUTE[key]
    configs, _ = enumerate_space(state.space)
    out = []
    for c in configs:
        fits, _, specs = fitting(state, c, state.group(c)[0])
        if fits:
            fc = min((_forecast(state, spec) for spec in specs),
                     key=lambda f: f.iteration_time)
            out.append((score(c, fc.iteration_time) if score else fc.iteration_time, c, fc))
    out.sort(key=lambda t: (t[0], t[1]))
    if score is None:
        _BRUTE[key] = out
    return out


@pytest.mark.parametrize("job, top", [("dense", 10), ("moe", 10), ("dense", 1)])
def test_the_top_k_equals_brute_force(small, job, top):
    state = _state(small, job)
    brute = _brute_force(state)
    assert len(brute) > 100              # a real space: hundreds of configurations fit
    result = search.run(str(small), job=job, top=top, engine=LocalEngine(1))
    assert [r["config"] for r in result.rows] == [c for _, c, _ in brute[:top]]
    assert [r["iteration_time_s"] for r in result.rows] == [fc.iteration_time
                                                            for _, _, fc in brute[:top]]
    assert [r["tokens_per_s"] for r in result.rows] == [fc.tokens_per_s
                                                        for _, _, fc in brute[:top]]
    # the search forecast fully only a fraction of what brute force forecasts
    assert result.fit < len(brute) / 3
    # and the breakdown of each winner is the forecast's own
    assert result.rows[0]["breakdown_s"] == brute[0][2].breakdown


def test_cost_per_token_ranks_across_gpu_counts_like_brute_force(small):
    state = _state(small, "dense", (8, 16))
    # 300,000 USD per host of 8 GPUs, nothing else priced: 37,500 USD per GPU, written off
    # over 4 years; per token of a 16 x 2,048-token iteration
    life = 4 * 365 * 86400
    brute = _brute_force(state, lambda c, t: c.gpus * 37500.0 * t / life / (16 * 2048))
    result = search.run(str(small), job="dense", objective="cost_per_token", gpus=(8, 16),
                        top=5, engine=LocalEngine(1))
    assert [r["config"] for r in result.rows] == [c for _, c, _ in brute[:5]]
    for r, (score, _, _) in zip(result.rows, brute):
        assert r["cost_per_token_usd"] == pytest.approx(score, rel=1e-12)
    assert {c.gpus for _, c, _ in brute} == {8, 16}
    # the feeders, switches and the rest have no price: W800 says so, and the summary's
    # definition of the cost says they are not in it
    # W800: unpriced equipment; W753: the job's regime is outside the calibrated envelope
    assert [d.code for d in result.diagnostics] == ["W800", "W753"]
    from astral_dsl.outputs.search import summary

    (line,) = [x for x in summary(result) if x.startswith("  cost per token:")]
    assert line.endswith("; what W800 names has no price and is not in it")


@pytest.mark.parametrize("job", ["dense", "moe"])
def test_every_bound_is_at_most_the_forecast(small, job):
    state = _state(small, job)
    configs, _ = enumerate_space(state.space)
    checked = 0
    for c in configs:
        fits, _, ways = fitting(state, c, state.group(c)[0])
        if not fits:
            continue
        low, tail = state.group(c)
        spec = c.spec(state.space)
        b1 = screen_bound(spec, state.profile(c, low.groups["tp"]), tail, state.hop(c),
                          dp=state.dp_profile(c, low.groups["dp"]))
        for fitted in ways:         # each way of making it fit costs at least the bound
            t = _forecast(state, fitted).iteration_time
            assert 0 < b1 <= t, (c.label(), b1, t)
            checked += 1
    assert checked > 100


def _product(state, n):
    """Every combination of the dimensions' candidate values, as seer.forecast options."""
    m, batch = state.space.base.model, state.space.batch
    for tp, cp, pp in itertools.product(divisors(n), repeat=3):
        if n % (tp * cp * pp):
            continue
        dp = n // (tp * cp * pp)
        for ep in (divisors(dp * cp) if m.experts else [1]):
            for micro, v in itertools.product(divisors(batch), [1, 2, 3]):
                for rec in state.space.recompute:
                    yield dict(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, micro=micro,
                               virtual_stages=v, schedule="interleaved" if v > 1 else "1f1b",
                               recompute=rec, global_batch=batch)


@pytest.mark.parametrize("job", ["dense", "moe"])
def test_the_rules_agree_with_seers_validation(small, job):
    """A configuration is admitted exactly when Seer's validation finds no error in it other
    than memory (the search's own check), the interleaving requirement (Megatron-LM's,
    which Seer's rule applies when it chooses) and context-parallel chunks of a FlashAttention
    tile at least (W760: cp = 16 on 2,048 tokens is refused by the search, warned of by
    validation)."""
    state = _state(small, job)
    design, inst = state.design, state.job
    configs, _ = enumerate_space(state.space)
    admitted = {(c.tp, c.cp, c.pp, c.dp, c.ep, c.micro, c.v, c.recompute)
                for c in configs if c.zero == 0}
    agreed = 0
    for opt in _product(state, 16):
        key = (opt["tp"], opt["cp"], opt["pp"], opt["dp"], opt["ep"], opt["micro"],
               opt["virtual_stages"], opt["recompute"])
        stages = split(state.space.base.model.layers, opt["pp"]) \
            if opt["pp"] <= state.space.base.model.layers else None
        if stages:
            opt["stages"] = stages
        diags, _, _ = seer.validate_job(design, inst, **opt)
        errors = {d.code for d in diags if d.is_error} - {"E757"}
        m = state.space.batch // (opt["micro"] * opt["dp"]) if not errors else 0
        interleave_ok = opt["virtual_stages"] == 1 or (m and m % opt["pp"] == 0)
        v_listed = opt["virtual_stages"] == 1 or (
            opt["pp"] > 1 and stages is None
            and (state.space.base.model.layers // opt["pp"]) % opt["virtual_stages"] == 0)
        if not v_listed:
            continue                      # not a candidate: the virtual stages must divide
        tiled = "W760" not in {d.code for d in diags}
        assert (not errors and interleave_ok and tiled) == (key in admitted), (opt, errors)
        agreed += 1
    assert agreed > 300


def test_a_configuration_forecasts_as_the_job_would_with_its_fields(small):
    """Config.spec is the JobSpec seer.forecast makes of the job with these fields."""
    state = _state(small, "dense")
    configs, _ = enumerate_space(state.space)
    model = seer.find_job(state.design, "dense").field("model")
    from astral_dsl.analyses.walk import Resolver

    model_inst = Resolver(state.design)(model)
    for c in configs[::37]:
        spec = job_spec(state.job, model_inst, **{k: v for k, v in c.options(state.space).items()
                                                  if v is not None})
        assert spec == c.spec(state.space)


def test_the_space_counts_each_rejection_once(small):
    state = _state(small, "dense")
    configs, counts = enumerate_space(state.space)
    assert counts.admitted == len(configs) == len(set(configs))
    assert counts.enumerated == counts.admitted + sum(n for _, n in counts.rejected)
    # 8 heads: tp = 16 divides none (E750); 6 layers: pp = 8 and 16 are more stages than
    # layers (E751); pp = 4 splits them 1, 2, 2, 1 (the extra layers in the middle)
    rules = dict(counts.rejected)
    assert rules["tp_heads"] > 0 and rules["pp_layers"] > 0
    assert all(c.tp <= 8 and c.pp <= 4 for c in configs)
    assert {c.stages for c in configs if c.pp == 4} == {(1, 2, 2, 1)}
    # with fused attention selective recomputation keeps what `none` keeps: not a choice
    assert {c.recompute for c in configs} == {"none", "full"}
    assert RULES["tp_heads"][0] == "E750"


def test_the_search_never_takes_a_cp_context_parallelism_refuses(small):
    """Context parallelism's rules (seer/validate_layout.py cp_split, which validation asks
    too): the 2,048-token sequence in 2 x cp chunks of at least 128 tokens, so cp <= 8. On 16
    GPUs cp = 16 gives chunks of 64 (W760); on 24, cp = 3, 6, 12 and 24 do not divide 2,048
    into 2 x cp chunks (E756); cp = 8 (chunks of 128) stays. The 524,288-GPU reference job's
    search took cp up to 4,096 (2 tokens a rank) and ran for hours."""
    state = _state(small, "dense", gpus=(16, 24))
    configs, counts = enumerate_space(state.space)
    assert {c.cp for c in configs} == {1, 2, 4, 8}
    rules = dict(counts.rejected)
    assert rules["seq_cp"] > 0 and rules["cp_tile"] > 0
    assert RULES["seq_cp"][0] == "E756" and RULES["cp_tile"][0] == "W760"


def test_a_space_beyond_the_budget_is_refused_before_any_work(small, capsys, monkeypatch):
    """E803 (exit 2) once more configurations are admitted than space.MAX_CONFIGS, before any
    is screened; the search of the same job under the budget ranks (test_cli_table_...)."""
    from astral_dsl.explore.search import space, work

    on_8 = len(enumerate_space(_state(small, "dense", gpus=(8,)).space)[0])
    monkeypatch.setattr(space, "MAX_CONFIGS", on_8)    # 8 GPUs fit in it, 8 and 16 do not
    monkeypatch.setattr(work, "screen", None)          # screening would fail: never reached
    with pytest.raises(search.SearchError) as exc:
        search.run(str(small), job="dense", gpus=(8, 16, 32), workers=1)
    (d,) = exc.value.diagnostics
    assert d.code == "E803" and d.hint.startswith("search fewer GPU counts")
    assert d.message == (f"job `dense`: the first 2 of the 3 GPU counts from 8 to 32 admit more "
                         f"than {on_8:,} parallel configurations, beyond what a search takes "
                         f"(README, Limits)")
    assert d.hint == "search fewer GPU counts at a time (--gpus with a larger step, or a list)"
    monkeypatch.setattr(space, "MAX_CONFIGS", 100)
    code, out, _ = _cli(["search", str(small), "--job", "dense", "--workers", "1"], capsys)
    assert code == 2 and "error[E803]: job `dense`: 16 GPUs admit more than 100" in out
    assert "= hint: the micro-batches searched are the divisors of the global batch: a batch " \
           "with fewer divisors, or a smaller GPU count (--gpus)" in out


def test_a_space_beyond_the_budget_names_the_api_argument(small, monkeypatch):
    """E803's hints from the API name its argument `gpus` (they said `--gpus`, an option the
    caller never gave), as the search's other refusals from the API do."""
    from astral_dsl.explore.search import space, work

    on_8 = len(enumerate_space(_state(small, "dense", gpus=(8,)).space)[0])
    monkeypatch.setattr(space, "MAX_CONFIGS", on_8)
    monkeypatch.setattr(work, "screen", None)          # screening would fail: never reached
    for gpus, hint in (([8, 16, 32], "search fewer GPU counts at a time (gpus with a larger "
                                     "step, or a list)"),
                       ([16], "the micro-batches searched are the divisors of the global "
                              "batch: a batch with fewer divisors, or a smaller GPU count "
                              "(gpus)")):
        with pytest.raises(astral_dsl.SearchError) as exc:
            astral_dsl.search(small, job="dense", gpus=gpus, workers=1)
        (d,) = exc.value.diagnostics
        assert (d.code, d.hint) == ("E803", hint), gpus


def _cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_table_json_and_files(small, tmp_path, capsys):
    base = ["search", str(small), "--job", "dense", "--top", "3", "--workers", "1"]
    code, out, _ = _cli(base, capsys)
    assert code == 0, out
    text = out
    out = " ".join(out.split())          # the summary is wrapped to the width
    assert "search: job `dense` (Tiny) on 16 x H100_SXM in Lab (32 GPUs)" in out
    assert "configurations enumerated" in out and "forecast fully" in out
    assert "where the time goes" in out and "as declared: tp4 pp2 dp2" in out
    code, out, err = _cli(base + ["--format", "json"], capsys)
    doc = json.loads(out)           # one document, every command's envelope; nothing on stderr
    assert (code, err, doc["valid"], doc["job"], doc["top"]) == (0, "", True, "dense", 3)
    assert doc["summary"][0] == "search: job `dense` (Tiny) on 16 x H100_SXM in Lab (32 GPUs), " \
                                "by tokens/s (highest first)"
    assert doc["declared"]["label"].startswith("tp4 pp2 dp2") and doc["declared_errors"] == []
    rows = doc["rows"]
    code, out, err = _cli(base + ["--format", "jsonl"], capsys)
    assert [json.loads(line) for line in out.splitlines()] == rows
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert list(rows[0])[:12] == ["rank", "gpus", "tp", "pp", "dp", "cp", "ep",
                                  "virtual_stages", "micro_batch", "recompute",
                                  "recompute_layers", "zero"]
    assert rows[0]["recompute_layers"] is None        # it fits without recomputing part
    assert rows[0]["tokens_per_s"] >= rows[1]["tokens_per_s"] >= rows[2]["tokens_per_s"]
    assert sum(rows[0]["breakdown_s"].values()) == pytest.approx(rows[0]["iteration_time_s"])
    # the table's iteration carries its unit, its header none (it had said `iteration s` over
    # `9.7 ms`): the ranking's header lines run from the blank line to its first rule
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("\u2500"))
    blank = max(i for i in range(rule) if not lines[i].strip())
    header = " ".join(lines[blank + 1:rule]).split()
    t = rows[0]["iteration_time_s"]
    cell = f"{t:.3f} s" if t >= 1 else f"{t * 1e3:.1f} ms"
    assert "iteration" in header and "s" not in header and cell in lines[rule + 1]
    assert "note: search: job `dense`" in err
    _cli(base + ["-o", str(tmp_path / "r.jsonl")], capsys)
    assert (tmp_path / "r.jsonl").read_text() == out          # byte for byte
    code, out, _ = _cli(base + ["-o", str(tmp_path / "r.csv")], capsys)
    assert "3 configurations written to" in out
    with open(tmp_path / "r.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [int(r["tp"]) for r in table] == [r["tp"] for r in rows]
    assert float(table[0]["breakdown_compute_s"]) == rows[0]["breakdown_s"]["compute"]
    # booleans as JSON (and `astral sweep -o x.csv`) write them, not Python's True/False
    assert [(r["may_not_fit"], r["inside_envelope"]) for r in table] == [
        (json.dumps(r["may_not_fit"]), json.dumps(r["calibration"]["inside"])) for r in rows]


def test_cli_default_job_is_the_first(small, capsys):
    _, out, _ = _cli(["search", str(small), "--top", "1", "--workers", "1"], capsys)
    assert "job `dense`" in out


@pytest.mark.parametrize("extra, message", [
    (["--top", "0"], "--top must be at least 1"),
    # past MAX_TOP (was accepted: --top 10^9 forecast every admitted configuration)
    (["--top", "1001"], "--top 1,001: a search ranks at most 1,000 configurations"),
    (["--top", "1000000000"], "--top 1,000,000,000: a search ranks at most 1,000"),
    (["--gpus", "64"], "--gpus 64: the placement `Lab` holds 32 GPUs"),
    (["--gpus", "1.5"], "`1.5` is not a whole number of GPUs"),
    (["--gpus", "0"], "`0` is not a whole number of GPUs of at least 1"),    # 0 is whole
    # isdigit() and int() read another script's digits: `٨` searched 8 GPUs
    (["--gpus", "\u0668"], "`\u0668` is not a whole number of GPUs of at least 1"),
    (["--gpus", "\u0668" + "\u0660" * 10], "is not a whole number of GPUs of at least 1"),
    (["--gpus", "8..4"], "the range is empty"),
    # read as 9.9999999999999999999999e22: it was "not a whole number of GPUs"
    (["--gpus", "99999999999999999999999"], "--gpus 99999999999999999999999: more GPUs than a "
                                            "design holds (10^9)"),
    (["--gpus", "1..1000000000000"], "1,000,000,000,000 values, more than --gpus takes "
                                     "(100,000)"),      # it said "than a sweep takes"
    (["--life", "4"], "--life 4: write a quantity"),
    (["--life", "-1 yr"], "a write-off period is positive"),
    # a number in its unit but not in seconds: was E000 (OverflowError), exit 3
    (["--life", "1e308yr"], "--life 1e308yr: beyond the range of a number in s (1.8e308)"),
    # a number of seconds, but no write-off period: 1e-300 s priced a token at 1.9e305 USD
    (["--life", "1e-300s"], "--life 1e-300s: a write-off period is from a day to a century"),
    (["--life", "23h"], "--life 23h: a write-off period is from a day to a century"),
    (["--life", "101yr"], "--life 101yr: a write-off period is from a day to a century"),
    # past MAX_LOCAL_WORKERS (was accepted: 115 s against 4.6 s with one, on 2 cores)
    (["--workers", "100000"], "--workers 100,000: more than 1,024 local worker processes"),
    (["-o", "r.txt"], "the extension chooses the format"),
])
def test_usage_errors(small, capsys, extra, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(["search", str(small), "--workers", "1"] + extra, capsys)
    assert code == 2, err
    assert message in err


def test_cost_per_token_needs_prices(small, tmp_path, capsys):
    unpriced = tmp_path / "u.astral"
    unpriced.write_text(small.read_text().replace(" { price = 300000 USD }", ""))
    code, _, err = _cli(["search", str(unpriced), "--objective", "cost_per_token",
                         "--workers", "1"], capsys)
    assert code == 2 and "--objective cost_per_token needs prices" in err


def test_a_job_that_cannot_be_forecast_is_reported(small, tmp_path, capsys):
    broken = tmp_path / "b.astral"
    broken.write_text(small.read_text().replace("heads = 8, kv_heads = 4", "heads = 7, "
                                                                          "kv_heads = 4"))
    code, out, _ = _cli(["search", str(broken), "--workers", "1"], capsys)
    assert code == 1 and "E763" in out


def test_json_with_no_fitting_configuration_is_still_one_document(small, tmp_path, capsys):
    """A 405B-sized model on 16 H100s: ~6.5 TB of weights, gradients and Adam states (16 B a
    parameter) against 16 x 80 GB, so no layout fits; `--format json` printed nothing (exit 1),
    now the envelope with the counts (exit 1 still)."""
    big = tmp_path / "big.astral"
    big.write_text(small.read_text().replace(
        "layers = 6, hidden = 1024, heads = 8, kv_heads = 4, ffn = 4096",
        "layers = 126, hidden = 16384, heads = 128, kv_heads = 8, ffn = 53248"))
    code, out, err = _cli(["search", str(big), "--job", "dense", "--workers", "1",
                           "--format", "json"], capsys)
    assert code == 1, err
    (line,) = out.splitlines()
    doc = json.loads(line)
    assert doc["rows"] == [] and doc["counts"]["fit"] == 0 and doc["job"] == "dense"
    assert doc["file"] == str(big) and doc["valid"] is False      # as the exit code says
    # the switches are unpriced (W800); the job is outside the calibrated envelope (W753)
    assert [d["code"] for d in doc["diagnostics"]] == ["W800", "W753"]
    assert doc["counts"]["enumerated"] >= doc["counts"]["admitted"] > 0


def test_no_configuration_admitted_is_not_said_to_miss_memory(small, tmp_path, capsys):
    """A GPU count no layout of the job divides (`--gpus 30`, 2 x 3 x 5, for 8 heads): every
    configuration is rejected by a rule, none admitted, and the table said "no configuration
    fits in memory", a reason none of them was refused for. The memory case keeps it."""
    code, out, _ = _cli(["search", str(small), "--job", "dense", "--gpus", "30",
                         "--workers", "1"], capsys)
    assert code == 1 and " 0 admitted" in out
    assert out.endswith("\nno configuration passes the rules: each was rejected, as counted "
                        "above\n") and "fits in memory\n" not in out
    big = tmp_path / "big.astral"
    big.write_text(small.read_text().replace(
        "layers = 6, hidden = 1024, heads = 8, kv_heads = 4, ffn = 4096",
        "layers = 126, hidden = 16384, heads = 128, kv_heads = 8, ffn = 53248"))
    code, out, _ = _cli(["search", str(big), "--job", "dense", "--workers", "1"], capsys)
    assert code == 1 and out.endswith("\nno configuration fits in memory\n")


@pytest.mark.parametrize("name", ["gpu_no_nvlink", "gpu_no_bandwidth", "gpu_no_flops",
                                  "gpu_fp8_peak_only"])
def test_a_gpu_without_a_figure_every_configuration_needs_is_reported(name, capsys):
    """E758 for the GPU (it divided by the missing figure: E000), whatever the layouts."""
    bad = Path(__file__).resolve().parents[1] / "bad" / "jobs" / f"{name}.astral"
    code, out, err = _cli(["search", str(bad), "--workers", "1"], capsys)
    assert code == 1 and "error[E758]" in out and "E000" not in out + err


class _LosesOneTask(LocalEngine):
    """One process; the first task of its `n`-th call is lost, as a dead worker's would be."""

    def __init__(self, n):
        super().__init__(1)
        self.n, self.calls, self.lost_task = n, 0, None

    def run(self, tasks, done=lambda i: None, lost=None):
        self.calls += 1
        if self.calls != self.n:
            return super().run(tasks, done, lost)
        self.lost_task = tasks[0]
        rest = super().run(tasks[1:], lambda i: done(i + 1), lost)
        return [lost(0, "the worker died (test)")] + rest


def test_lost_work_is_counted_and_the_rest_still_ranked(small):
    full = search.run(str(small), job="dense", top=3, engine=LocalEngine(1))
    # call 1 screens, call 2 is the first forecasting round: its first task holds the
    # PER_TASK (3) configurations of best bound, which are lost
    engine = _LosesOneTask(2)
    lossy = search.run(str(small), job="dense", top=3, engine=engine)
    e800 = [d for d in lossy.diagnostics if d.code == "E800"]
    assert len(e800) == 1
    assert e800[0].message == "3 configurations were not evaluated: the worker died (test)"
    assert "the ranking may miss them" in e800[0].hint
    assert len(lossy.rows) == 3
    lost = set(engine.lost_task[1][2])
    assert len(lost) == 3 and not lost & {r["config"] for r in lossy.rows}
    # the full run's winners that were not lost are still found
    kept = [r["config"] for r in full.rows if r["config"] not in lost]
    assert kept == [r["config"] for r in lossy.rows][:len(kept)]
    # what is ranked is still ranked right: each row is a forecast of the full run's
    assert [r["iteration_time_s"] for r in lossy.rows] == \
        sorted(r["iteration_time_s"] for r in lossy.rows)
    # screening losses count every configuration of the lost families
    screen_lossy = search.run(str(small), job="dense", top=3, engine=_LosesOneTask(1))
    (lost_screen,) = [d for d in screen_lossy.diagnostics if d.code == "E800"]
    # by hand: the admitted configurations grouped by family (all but micro-batch and ZeRO) in
    # the order enumerated, one process: chunks of ceil(families / 8) families; the first is lost
    configs, _ = enumerate_space(_state(small, "dense").space)
    families = {}
    for c in configs:
        families.setdefault(c.family(), []).append(c)
    size = -(-len(families) // 8)
    expected = sum(len(m) for m in list(families.values())[:size])
    assert lost_screen.message == \
        f"{expected:,} configurations were not evaluated: the worker died (test)"
    assert screen_lossy.counts.enumerated == full.counts.enumerated


class _Keeps(LocalEngine):
    """The local engine, keeping each call's tasks and answers."""

    def __init__(self):
        super().__init__(1)
        self.calls = []

    def run(self, tasks, done=lambda i: None, lost=None):
        results = super().run(tasks, done, lost)
        self.calls.append((tasks, results))
        return results


def test_an_answer_of_another_shape_is_refused(small):
    # what the search accepts from a worker (a worker of another version, or a rogue one,
    # answering plain data of another shape): a short list cost configurations silently, a
    # text where a number goes stopped the search
    from astral_dsl.explore.search.work import are_bounds, are_forecasts

    engine = _Keeps()
    search.run(str(small), job="dense", top=3, engine=engine)
    (tasks, screened), *rounds = engine.calls
    sizes = [[len(members) for _, members in args[2]] for _, args in tasks]
    assert rounds and all(are_bounds(r, n) for r, n in zip(screened, sizes))
    assert not are_bounds(screened[0][:-1], sizes[0])
    assert not are_bounds([["1"] * n for n in sizes[0]], sizes[0])
    tasks, answers = rounds[0]
    answer, n = answers[0], len(tasks[0][1][2])
    assert are_forecasts(answer, n) and not are_forecasts(answer + answer[:1], n)
    fits = next(k for k, t in enumerate(answer) if t[0])          # one holds a forecast
    for tamper in ({"iteration_time_s": "fast"}, {"calibration": {"band": [0.1]}},
                   {"breakdown_s": {"compute": None}}):
        bad = list(answer)
        bad[fits] = (True, answer[fits][1], {**answer[fits][2], **tamper})
        assert not are_forecasts(bad, n)
    row = dict(answer[fits][2])
    del row["mfu"]
    assert not are_forecasts(answer[:fits] + [(True, answer[fits][1], row)] + answer[fits + 1:],
                             n)


@pytest.mark.parametrize("command", ["search", "forecast"])
def test_an_empty_design_says_w100_before_e758_as_forecast_does(command, tmp_path, capsys):
    """The envelope of `search` of an empty file held E758 alone, where `forecast`'s holds the
    file's W100 "the file is empty" first: both now say the design's diagnostics, then the
    job's."""
    empty = tmp_path / "empty.astral"
    empty.write_text("")
    code, out, _ = _cli([command, str(empty), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False
    assert [(d["code"], d["message"]) for d in doc["diagnostics"]] == [
        ("W100", "the file is empty"), ("E758", "the design declares no job to forecast")]



def test_sure_fit_ranks_the_best_of_what_fits_with_the_estimates_uncertainty(tmp_path, capsys):
    """--sure-fit: the top k of the configurations whose memory estimate plus its uncertainty
    fits in the GPU (none that `may_not_fit`), as the whole ranking (top 1,000) filtered gives
    them. On 5.5 GB GPUs 9 of the plain top 10 may not fit (all 10 with stop 64's fit, 9 with stop
    63's and stop 65's: the ranking follows the forecast's constants)."""
    src = textwrap.dedent(SMALL).replace(
        "host Node = HGX8(gpu = H100_SXM,",
        "gpu Tight = H100_SXM { memory = 5.5 GB }\nhost Node = HGX8(gpu = Tight,")
    path = tmp_path / "tight.astral"
    path.write_text(src, encoding="utf-8")
    whole = search.run(str(path), job="dense", top=1000, engine=LocalEngine(1))
    assert sum(r["may_not_fit"] for r in whole.rows[:10]) == 9
    sure = [r["config"] for r in whole.rows if not r["may_not_fit"]]
    assert len(sure) > 100
    result = search.run(str(path), job="dense", top=10, engine=LocalEngine(1), sure_fit=True)
    assert [r["config"] for r in result.rows] == sure[:10]
    assert not any(r["may_not_fit"] for r in result.rows)
    assert result.sure_fit and 0 < result.unsure < result.fit
    code, out, _ = _cli(["search", str(path), "--job", "dense", "--top", "3", "--sure-fit",
                         "--workers", "1", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["counts"]["left_out_may_not_fit"] > 0
    assert any(line.startswith("--sure-fit: ") and "left out, their memory estimate plus its "
               "uncertainty past the GPU's 5.5 GB" in line for line in doc["summary"])
    assert [r["rank"] for r in doc["rows"]] == [1, 2, 3]
    assert not any(r["may_not_fit"] for r in doc["rows"])


def test_sure_fit_on_a_gpu_without_memory_does_not_claim_the_rows_fit(tmp_path):
    """--sure-fit on a GPU that declares no `memory`: nothing can be held to it, so nothing is
    left out, and the summary says the rows are not sure to fit; it said "0 of those left out,
    their memory estimate plus its uncertainty past the GPU's memory: the rest ranked"."""
    import re

    from astral_dsl.outputs import search as search_out

    hw = (Path(__file__).resolve().parents[2] / "stdlib/hardware.astral").read_text("utf-8")
    body = re.search(r"gpu H100_SXM \{(.*?)\n\}", hw, re.S).group(1)
    body = "\n".join(ln for ln in body.splitlines() if not ln.strip().startswith("memory ="))
    path = tmp_path / "nomem.astral"
    path.write_text(textwrap.dedent(SMALL).replace(
        "host Node = HGX8(gpu = H100_SXM,",
        "gpu NoMem {" + body + "\n}\nhost Node = HGX8(gpu = NoMem,"), encoding="utf-8")
    result = search.run(str(path), job="dense", top=3, engine=LocalEngine(1), sure_fit=True)
    assert result.gpu_memory_gb is None and result.unsure == 0 and len(result.rows) == 3
    (line,) = [ln for ln in search_out.summary(result) if "--sure-fit" in ln]
    assert line == ("  --sure-fit: the GPU `NoMem` declares no `memory`: no estimate could be "
                    "held to it, none was left out (the rows are not sure to fit)")


def test_a_configurations_family_is_it_without_micro_batch_and_zero_stage():
    """Config.family, made field by field: every other field kept, whatever Config holds."""
    from astral_dsl.explore.search.space import Config

    c = Config(gpus=64, tp=2, pp=4, dp=8, cp=2, ep=4, v=2, micro=4, recompute="full", zero=1,
               stages=(10, 12, 12, 10))
    assert [f.name for f in attrs.fields(Config)] == [
        "gpus", "tp", "pp", "dp", "cp", "ep", "v", "micro", "recompute", "zero", "stages"]
    assert all(getattr(c, f.name) != f.default for f in attrs.fields(Config))
    assert c.family() == attrs.evolve(c, micro=0, zero=0)
