"""outputs/tally.py: findings grouped for one diagnostic a group (the NetBox export's E705,
E706, E708, E709)."""
from astral_dsl.outputs.tally import Tally, more_like_it


def test_keeps_the_first_of_each_group_and_counts_them_in_first_come_order():
    t = Tally()
    for key, item in [("b", 1), ("a", 2), ("b", 3), ("b", 4), ("c", 5)]:
        t.add(key, item)
    assert list(t) == [("b", 1, 3), ("a", 2, 1), ("c", 5, 1)]
    assert len(t) == 3


def test_says_how_many_more_beyond_the_first_and_nothing_for_one():
    assert more_like_it(1) == ""
    assert more_like_it(2) == "; 1 more like it"
    assert more_like_it(1235) == "; 1,234 more like it"
    assert more_like_it(3, " ({} more like it)") == " (2 more like it)"
