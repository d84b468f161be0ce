"""`astral_dsl.report(path, output)` writes the page whole or not at all, in a temporary file
of its own: it wrote `output.tmp` beside the output, so a user's `review.html.tmp` was
overwritten and renamed away, and an output that is a folder left `review.tmp` behind (with
IsADirectoryError naming the temporary file). The page is stubbed: what is tested is the
writing (the page's content is test_report.py's)."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import astral_dsl


@attrs.frozen
class _Review:
    overrides: tuple = ()


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    import astral_dsl.api.review as review
    import astral_dsl.outputs.report as report

    monkeypatch.setattr(review, "collect", lambda ws, **kw: _Review())
    monkeypatch.setattr(report, "build", lambda r, title=None: "<html>page</html>")
    design = tmp_path / "d.astral"
    design.write_text("host H { power = 1 kW }\nrack R { hosts = 1 x H }\n"
                      "site S { racks = 1 x R }\n", encoding="utf-8")
    return design


def test_a_users_file_beside_the_output_is_left_alone(stubbed, tmp_path):
    mine = tmp_path / "review.html.tmp"
    mine.write_text("my notes", encoding="utf-8")
    out = astral_dsl.report(stubbed, tmp_path / "review.html")
    assert out.read_text(encoding="utf-8") == "<html>page</html>"
    assert mine.read_text(encoding="utf-8") == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.astral", "review.html",
                                                          "review.html.tmp"]


def test_an_output_that_cannot_be_written_leaves_nothing(stubbed, tmp_path):
    folder = tmp_path / "review"
    folder.mkdir()
    with pytest.raises(OSError):
        astral_dsl.report(stubbed, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.astral", "review"]
    assert list(folder.iterdir()) == []
