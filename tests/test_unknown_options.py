"""Every option of a `?` is checked as its first one is, before sizing: its type, its unit, its
field's domain. The front end went on with the first option alone and sizing tried the others,
where a wrong one (a negative capacity, a length for a power, a fluid for a CDU, a count of 0
feeders, a replication count of 2.5) only failed its own combinations: it was dropped without a
word, and the design sized as if it had not been written (or every combination failed, E660)."""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl

DESIGN = """\
gpu G { power = 700 W, price = 20000 USD }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 %, price = 40000 USD }
rack R {
  hosts = (? in 1..3) x H
  power_limit = 35 kW
}
fluid F { coolprop = "Water" }
cdu C { capacity = 100 kW, price = 30000 USD }
cdu D { capacity = 200 kW, price = 50000 USD }
rectifier Rect { module = 25 kW, redundancy = n_plus_1, price = 1500 USD, modules = ? in 3..8 }
row Row {
  racks = 4 x R
  feeder a {
    current = dc, voltage = 240 V, side = A, capacity = 50 kW
    count = ? in 1..<4, price = 5000 USD
    rectifier = Rect
    serves = racks
  }
  loop l { fluid = F, supply = 35 degC, rise = 10 K, cdu = ? in [C, D], cdus = ? in 1..4,
           redundancy = n_plus_1, serves = racks }
}
site S {
  rows = 2 x Row
  check gpus >= 96 else error "need 96 GPUs"
  minimize cost
}
"""


def _checked(tmp_path, old: str, new: str):
    assert old in DESIGN
    path = tmp_path / "options.astral"
    path.write_text(DESIGN.replace(old, new, 1), encoding="utf-8")
    return astral_dsl.check(astral_dsl.compile(path))


def test_the_design_as_written_sizes():
    # the cases below change one option of it
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        result = _checked(Path(folder), "minimize cost", "minimize cost")
        assert not [d for d in result.diagnostics if d.is_error], result.diagnostics


@pytest.mark.parametrize("old, new, code, message", [
    ("capacity = 50 kW", "capacity = ? in [50 kW, -5 kW]", "E315",
     "an option of `capacity` must be positive, not -5 kW"),
    ("capacity = 50 kW", "capacity = ? in [50 kW, 3 m]", "E304",
     "an option of `capacity` expects a power, got length (m)"),
    ("capacity = 50 kW", 'capacity = ? in [50 kW, "x"]', "E303",
     "an option of `capacity` must be a power quantity, not a string"),
    ("capacity = 50 kW", "capacity = ? in [50 kW, 1e30 kW]", "E316",
     "an option of `capacity` is beyond the plausible range: 1e30 kW"),
    ("cdu = ? in [C, D]", "cdu = ? in [C, F]", "E303",
     "an option of `cdu` must be a cdu, not a fluid `F`"),
    ("power_limit = 35 kW", "power_limit = ? in [35 kW, -1 kW]", "E314",
     "an option of `power_limit` must not be negative, not -1 kW"),
    ("count = ? in 1..<4", "count = ? in 0..3", "E309",
     "an option of `count` must be at least 1, not 0"),
    ("cdus = ? in 1..4", "cdus = ? in -2..4", "E314",
     "an option of `cdus` must not be negative, not -2"),
    ("modules = ? in 3..8", "modules = ? in -3..-1", "E314",
     "an option of `modules` must not be negative, not -3"),
    ("(? in 1..3) x H", "(? in [3, 2.5]) x H", "E400",
     "a replication count must be a positive whole number, not 2.5"),
    ("(? in 1..3) x H", "(? in [2, -3]) x H", "E400",
     "a replication count must be at least 1, not -3"),
    ("(? in 1..3) x H", "(? in [3, 3 kW]) x H", "E303",
     "a replication count must be a whole number, not a power (kW)"),
])
def test_an_option_outside_its_fields_domain_is_its_own_error(tmp_path, old, new, code,
                                                               message):
    result = _checked(tmp_path, old, new)
    errors = [d for d in result.diagnostics if d.is_error]
    assert [(d.code, d.message) for d in errors] == [(code, message)]
    # at the options as written, not at the whole `?` or the field's name
    (error,) = errors
    start = error.span.start
    line = DESIGN.replace(old, new, 1).splitlines()[start.line - 1]
    options = new[new.index("? in ") + len("? in "):].split(")")[0]
    assert line[start.column - 1:].startswith(options), (line, error.span)
    assert result.sizing is None       # before sizing, not one failed combination among others


def test_the_checks_of_a_design_not_sized_are_not_reported(tmp_path):
    # a front-end error leaves the design unsized, its `?`s at their first options (1 host a
    # rack: 64 GPUs): `need 96 GPUs` failing there said nothing of the design as sized
    result = _checked(tmp_path, "capacity = 50 kW", "capacity = 0 kW")
    assert [d.code for d in result.diagnostics if d.is_error] == ["E315"]
    # nor by the API's design as every command uses it (astral_dsl.load, Workspace.sized)
    loaded = astral_dsl.loads(DESIGN.replace("capacity = 50 kW", "capacity = 0 kW"),
                              name="t.astral", root=tmp_path)
    assert [d.code for d in loaded.diagnostics if d.is_error] == ["E315"]
    # nor beside E660, where no choice satisfies the design: its checks were read as sized
    failed = _checked(tmp_path, "need 96 GPUs", "need 96 GPUs\"\n  check gpus >= 10000 "
                                                "else error \"need 10,000 GPUs")
    assert [d.code for d in failed.diagnostics if d.is_error] == ["E660"]
    loaded = astral_dsl.load(tmp_path / "options.astral")
    assert [d.code for d in loaded.diagnostics if d.is_error] == ["E660"]
    # a design with no `?` still reports its failed checks beside a front-end error
    plain = textwrap.dedent("""\
        gpu G { power = 700 W }
        host H { gpus = 8 x G, power = 10 kW }
        rack R { hosts = 2 x H, power_limit = -1 kW }
        site S { racks = 2 x R, check gpus >= 96 else error "need 96 GPUs" }
        """)
    path = tmp_path / "plain.astral"
    path.write_text(plain, encoding="utf-8")
    result = astral_dsl.check(astral_dsl.compile(path))
    assert sorted(d.code for d in result.diagnostics if d.is_error) == ["E314", "E500"]


def test_an_option_of_an_argument_fits_its_parameter_or_field(tmp_path):
    # `HX(g = ? in [G, N])`: a NIC among a host's GPUs; `HX(power = ? in [..., -1 kW])`
    for args, message in (("g = ? in [G, N]", "an option of argument `g` of `HX` must be a gpu, "
                                              "not a nic `N`"),
                          ("g = G, power = ? in [10 kW, -1 kW]",
                           "an option of `power` must not be negative, not -1 kW")):
        text = textwrap.dedent(f"""\
            gpu G {{ power = 700 W, price = 20000 USD }}
            nic N {{ ports = 1, port_speed = 400 Gb/s }}
            host HX(g: gpu) {{ gpus = 8 x g, power = 10 kW, price = 40000 USD }}
            rack R {{ hosts = 2 x HX({args}) }}
            site S {{ racks = 2 x R, minimize cost }}
            """)
        design = astral_dsl.loads(text, name="args.astral", root=tmp_path)
        assert [d.message for d in design.diagnostics if d.is_error] == [message]


def test_a_choice_a_template_refuses_is_said_and_left_out(tmp_path):
    # `G(p = ? in [700 W, -700 W])`: the parameter takes any power, the field `power = p` not a
    # negative one; the -700 W combination is no design: sizing chose the other one without a
    # word (W663 now, where the value is refused, naming the combination)
    text = textwrap.dedent("""\
        gpu G(p: power) { power = p }
        host H { gpus = 8 x G(p = ? in [700 W, -700 W]), power = 10.2 kW }
        rack R { hosts = 4 x H }
        site S { racks = 2 x R }
        """)
    path = tmp_path / "choice.astral"
    path.write_text(text, encoding="utf-8")
    result = astral_dsl.check(astral_dsl.compile(path))
    assert not [d for d in result.diagnostics if d.is_error]
    (w,) = [d for d in result.diagnostics if d.code == "W663"]
    assert "[E314] `power` must not be negative, not -700 W" in w.message
    assert (w.span.file, w.span.start.line, w.span.start.column) == (str(path), 1, 27)
    assert f"1 combination(s) give it: ({path}:2:27 = -700 W)" in w.notes
    # the design with a valid option only has no W663
    path.write_text(text.replace(", -700 W]", ", 600 W]"), encoding="utf-8")
    assert "W663" not in {d.code for d in astral_dsl.check(astral_dsl.compile(path)).diagnostics}
