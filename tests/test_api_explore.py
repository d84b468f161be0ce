"""`astral_dsl.search` and `astral_dsl.margins`: `astral search` and `astral check --margins`
as functions beside `forecast` and `sweep` (the API had neither: a caller imported
astral_dsl.explore's modules by their paths), thin over the code the commands call, so they
give what the commands give."""
from __future__ import annotations

from pathlib import Path

import pytest
from clirun import astral

import astral_dsl
from astral_dsl.explore import margins as _margins
from astral_dsl.explore import search as _search

REPO = Path(__file__).resolve().parents[1]
RACK = REPO / "examples" / "tutorial_rack.astral"
POD = REPO / "examples" / "single_pod.astral"
BUSWAY = 'check "the rack\'s busway is rated 45 kW" in Tutorial.racks[0]'


def _by_label(report):
    return {m.limit.label: m for m in report.margins}


def test_margins_are_those_of_check_margins():
    report = astral_dsl.margins(RACK)
    assert isinstance(report, astral_dsl.MarginsReport)
    assert report == _margins.analyse(str(RACK))
    busway = _by_label(report)[BUSWAY]
    assert busway.condition == "10.2*servers <= 45 (in kW)" and busway.limit.holds
    # a Workspace's parameters and `overrides` are the design's: 5 servers break the busway
    broken = astral_dsl.margins(astral_dsl.compile(RACK).with_params(servers=5))
    assert not _by_label(broken)[BUSWAY].limit.holds
    assert broken == astral_dsl.margins(RACK, overrides={"servers": 5}) == \
        _margins.analyse(str(RACK), {"servers": "5"})
    only = astral_dsl.margins(RACK, params=["servers"])
    assert set(only.params) == {"servers"}
    with pytest.raises(TypeError, match="margins compile the design again from its file"):
        astral_dsl.margins(astral_dsl.compiles(RACK.read_text(), name="rack.astral"))
    with pytest.raises(TypeError, match="overrides is a mapping"):
        astral_dsl.margins(RACK, overrides=[("servers", 5)])  # type: ignore[arg-type]


def test_a_name_of_params_the_design_does_not_declare_is_said(tmp_path):
    """`margins(params=[...])` left a name that is no parameter out in silence, its margins
    with it (a typo gave a report of none): now E213 in the argument's words, `params=['x']`,
    with the did-you-mean; a parameter that is not a number has a note (it is not moved)."""
    design = tmp_path / "d.astral"
    design.write_text(RACK.read_text(encoding="utf-8").replace(
        "param servers = 4", 'param servers = 4\nparam label = "rack"'), encoding="utf-8")
    report = astral_dsl.margins(design, params=["servers", "sevrers", "label", "sevrers"])
    assert set(report.params) == {"servers"}
    said = [(d.code, d.message, d.hint) for d in report.diagnostics if d.code == "E213"]
    assert said == [("E213", "params=['sevrers']: the design has no parameter `sevrers`",
                     "did you mean `servers`?")]
    assert "`label` is not a number: its margins are not bracketed" in report.notes
    assert not [d for d in astral_dsl.margins(design, params=["servers"]).diagnostics
                if d.code == "E213"]


def test_search_ranks_as_astral_search_does():
    life = astral_dsl.Quantity.of(3, "yr")
    result = astral_dsl.search(POD, top=2, gpus=[64], life=life, workers=1)
    assert isinstance(result, astral_dsl.SearchResult)
    direct = _search.run(str(POD), top=2, gpus=[64], life_s=life.si, workers=1)
    assert [r["config"] for r in result.rows] == [r["config"] for r in direct.rows]
    assert [r["rank"] for r in result.rows] == [1, 2] and result.job == "llama70b"
    assert result.life_s == pytest.approx(3 * 365 * 86400) and not result.life_default


def test_search_refuses_what_the_command_refuses_before_any_work():
    with pytest.raises(astral_dsl.SearchError, match="a write-off period is from a day to a "
                                                     "century"):
        astral_dsl.search(POD, life=astral_dsl.Quantity.of(1, "s"))
    with pytest.raises(TypeError, match="life is a Quantity of time, not power"):
        astral_dsl.search(POD, life=astral_dsl.Quantity.of(4, "kW"))
    with pytest.raises(astral_dsl.SearchError, match="gpus: 0 is not a count of GPUs"):
        astral_dsl.search(POD, gpus=[0])
    with pytest.raises(TypeError, match="gpus is a list of GPU counts"):
        astral_dsl.search(POD, gpus="64")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="top is an int, not str"):
        astral_dsl.search(POD, top="3")  # type: ignore[arg-type]
    with pytest.raises(astral_dsl.SearchError, match="^top must be at least 1$"):
        astral_dsl.search(POD, top=0)
    with pytest.raises(astral_dsl.SearchError, match="^top 1,001: a search ranks at most 1,000 "
                                                     ".* or narrow the space with gpus$"):
        astral_dsl.search(POD, top=1001)
    with pytest.raises(astral_dsl.SearchError, match="^objective speed: one of tokens_per_s"):
        astral_dsl.search(POD, objective="speed")
    with pytest.raises(astral_dsl.SearchError, match="more than 1,024 local worker processes"):
        astral_dsl.search(POD, workers=100_000)


def test_search_names_the_api_arguments_where_the_command_names_its_options():
    """`search(gpus=[10**9])` said `--gpus 1000000000`, the command's option, to a caller that
    gave no option; the command still says `--gpus` (and `--objective`)."""
    for kw, said in [(dict(gpus=[10 ** 9]), "{}gpus 1000000000: the placement `Lab.pods[0]` "
                                            "holds 4,096 GPUs"),
                     (dict(objective="cost_per_token", gpus=[8]),
                      "{}objective cost_per_token needs prices: declare a `price` on the hosts "
                      "(or the GPUs) and the other equipment")]:
        with pytest.raises(astral_dsl.SearchError) as info:
            astral_dsl.search(POD, **kw)
        assert str(info.value) == said.format("")
        args = [f"--{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
                for k, v in kw.items()]
        run = astral("search", POD, *args)
        assert run.returncode == 2 and run.stderr.endswith(
            f"astral: error: {said.format('--')}\n"), run.stderr


def test_a_sweep_of_too_many_listed_values_is_refused_before_one_is_read(monkeypatch):
    """A list of 10^6 values took 20 s and 350 MB to be refused (each written as --grid text
    and parsed first); it is counted first now, and no value is read."""
    from astral_dsl.api import commands

    def read(*args):
        raise AssertionError("a value was read")
    monkeypatch.setattr(commands, "_one", read)
    for grid, points in (({"hosts_per_rack": range(10 ** 6)}, "1,000,000"),
                         ({"hosts_per_rack": list(range(400)), "rack_limit": [1] * 400},
                          "160,000")):
        grid = {k: list(v) if isinstance(v, range) else v for k, v in grid.items()}
        with pytest.raises(astral_dsl.SweepError) as exc:
            astral_dsl.sweep(POD, grid, workers=1)
        message = (f"the grids make {points} points, more than a sweep takes (100,000); narrow "
                   f"a range or take a larger step")
        assert str(exc.value) == message
        assert [(d.code, d.message) for d in exc.value.diagnostics] == [("E802", message)]
