"""W635: a feeder that nothing backs (no feeder of another side sharing its load, not one of a
`count = N` group) in a design that declares redundant feeders is a single point of failure:
the load it carries loses power when it fails (IT feeders and mechanical ones alike). A design of single feeds on purpose (no
`side`, no `count` above 1 anywhere) is not told about it."""
from __future__ import annotations

import astral_dsl

HEAD = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
"""
FEED = "current = dc, voltage = 240 V, capacity = 400 kW, efficiency = 96 %"


def _w635(body: str):
    design = astral_dsl.compiles(HEAD + body, name="backing.astral")
    return [d for d in astral_dsl.check(design).diagnostics if d.code == "W635"]


def _paired_and_store(store: str) -> str:
    """The rows' racks on an A/B pair; the storage rack on feeder `s`, declared `store`."""
    return f"""
site S {{
  racks = 2 x R
  store = 1 x R
  feeder a {{ {FEED}, side = A, serves = racks }}
  feeder b {{ {FEED}, side = B, serves = racks }}
  feeder s {{ {store}, serves = store }}
}}"""


def test_a_side_a_feeder_without_a_partner_in_a_redundant_design_warns():
    # the rows' racks on an A/B pair; the storage rack on side A alone: 4 x 10 kW = 40 kW
    (w,) = _w635(_paired_and_store(f"{FEED}, side = A"))
    assert w.message == ("feeder `S.s` is a single point of failure: no feeder of another side "
                         "shares its load and it is not one of a `count = N` group, so the "
                         "40 kW it carries is lost when it fails (its `side = A` names half "
                         "of an A/B pair)")
    assert w.hint == ("declare a partner feeder with `side = B` serving the same parts (2N), or "
                      "`count = 2` or more feeders sharing the load (N-1); a single feed on "
                      "purpose: `allow W635 \"reason\"`")
    assert (w.span.start.line, w.span.start.column) == (10, 10)      # the name `s`


def test_a_feeder_with_no_side_warns_when_another_feeder_is_redundant():
    (w,) = _w635(f"""
site S {{
  racks = 2 x R
  store = 1 x R
  feeder a {{ {FEED}, count = 2, serves = racks }}
  feeder s {{ {FEED}, serves = store }}
}}""")
    assert w.message.startswith("feeder `S.s` is a single point of failure")
    assert w.message.endswith("(the design's `S.a` is one of a `count = 2` group)")


def test_a_lone_mechanical_feeder_warns_beside_redundant_it_feeders():
    # the facility's consumers: the 5 kW of auxiliaries on one feed, the racks on an A/B pair
    (w,) = _w635(f"""
site S {{
  racks = 2 x R
  auxiliary = 5 kW
  feeder a {{ {FEED}, side = A, serves = racks }}
  feeder b {{ {FEED}, side = B, serves = racks }}
  feeder m {{ {FEED}, mechanical = true }}
}}""")
    assert w.message.startswith("feeder `S.m` is a single point of failure")
    assert "the 5 kW it carries" in w.message
    assert w.hint.startswith("declare `side = A` on it and a partner feeder with `side = B` "
                             "with `mechanical = true` beside it (2N)")


def test_backed_feeders_and_single_feed_designs_do_not_warn():
    # an A/B pair, an N-1 group (also one sized by `?`), and a design of single feeds on purpose
    assert not _w635(f"""
site S {{
  racks = 2 x R
  feeder a {{ {FEED}, side = A, serves = racks }}
  feeder b {{ {FEED}, side = B, serves = racks }}
}}""")
    assert not _w635(f"site S {{ racks = 2 x R\n feeder a {{ {FEED}, count = ?, serves = racks }} }}")
    assert not _w635(f"""
site S {{
  racks = 2 x R
  store = 1 x R
  feeder a {{ {FEED}, serves = racks }}
  feeder s {{ {FEED}, serves = store }}
}}""")


def test_a_count_left_to_sizing_without_a_capacity_is_told_to_declare_one():
    """`count = ?` asks for feeders that back one another, but without a `capacity` sizing
    takes one feeder to carry any load and sizes the count to 1: the hint said to declare
    `count = 2` (which the user had left to sizing), now it says to declare the `capacity`
    sizing needs; and a lone `count = ?` sized to 1 was not told at all (the sized design's
    count reads 1, so the design lost its evidence of redundancy)."""
    bare = "current = dc, voltage = 240 V"
    (w,) = _w635(_paired_and_store(f"{bare}, count = ?"))
    assert w.message == ("feeder `S.s` is a single point of failure: no feeder of another side "
                         "shares its load and its `count = ?` is sized to 1 (it declares no "
                         "`capacity`), so the 40 kW it carries is lost when it fails (its "
                         "`count = ?` asks for feeders that back one another)")
    assert w.hint == ("declare its `capacity`, so that sizing can count the feeders that carry "
                      "the load with one of them failed (N-1; without a rating one feeder is "
                      "taken to carry any load), or `side = A` on it and a partner feeder with "
                      "`side = B` serving the same parts (2N); a single feed on purpose: "
                      "`allow W635 \"reason\"`")
    (alone,) = _w635(f"site S {{ racks = 2 x R\n"
                     f" feeder a {{ {bare}, count = ?, serves = racks }} }}")
    assert alone.message.startswith("feeder `S.a` is a single point of failure")
    assert alone.hint.startswith("declare its `capacity`, so that sizing can count")


def test_under_a_scenario_a_count_sizing_chose_is_still_told_to_declare_its_capacity():
    """A scenario's twin is compiled with the values sizing chose, its instances unmarked:
    `astral size --scenario` said the `count = ?` feeder was "not one of a `count = N` group"
    and hinted `count = 2`, where the design without the scenario hinted the capacity."""
    text = HEAD + _paired_and_store("current = dc, voltage = 240 V, count = ?") + \
        "\nscenario hot { set S.racks.hosts.power = 11 kW }\n"
    checked = astral_dsl.check(astral_dsl.compiles(text, name="backing.astral"), ["hot"])
    (outcome,) = checked.scenarios
    (w,) = [d for d in outcome.result.diagnostics if d.code == "W635"]
    assert "its `count = ?` is sized to 1 (it declares no `capacity`)" in w.message
    assert w.hint.startswith("declare its `capacity`, so that sizing can count")


# ---- W624: a rectifier without an efficiency behind a feeder that declares its own -------------
def test_a_rectifier_without_an_efficiency_is_w624_not_a_silent_zero():
    """The feeder's own 98 % (its power shelves, say) counted; the rectifier's AC-DC conversion
    counted 0 W and nothing said so (W624 spoke only when neither declared one)."""
    design = astral_dsl.compiles(HEAD + """
rectifier Rect { module = 50 kW, modules = 2, redundancy = n_plus_1 }
site S {
  racks = 1 x R
  feeder a { current = dc, voltage = 240 V, capacity = 100 kW, efficiency = 98 %
             rectifier = Rect, serves = racks }
}""", name="rect.astral")
    (w,) = [d for d in astral_dsl.check(design).diagnostics if d.code == "W624"]
    assert w.message == ("rectifier `Rect` of feeder `S.a` declares no `efficiency`: its AC-DC "
                         "conversion losses count as 0 W in the facility power and the PUE, "
                         "only the feeder's own 98 % counts")
    assert w.span.start.line == 9          # at `rectifier = Rect`
