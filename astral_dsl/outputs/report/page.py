"""The review page: one self-contained HTML document (its style sheet, script and pictures
inline; it loads nothing). Same review, same bytes: nothing in it depends on the time, the
machine or the order of a dictionary."""
from __future__ import annotations

import base64
import hashlib
from typing import Optional

from astral_dsl.outputs.report import assets, sections, sizing
from astral_dsl.outputs.report.html import esc, tag
from astral_dsl.outputs.report.diagnosis import diagnosis_section
from astral_dsl.outputs.report.jobs import jobs_section

TOC = (("summary", "Summary"), ("diagnostics", "Diagnostics"), ("scenarios", "Scenarios"),
       ("views", "Pictures"), ("sizing", "Sizing"), ("pue", "PUE"), ("bom", "Bill of materials"),
       ("jobs", "Jobs"))


def script_hash(js: str) -> str:
    """A script's CSP source: 'sha256-<base64 of the SHA-256 of its text>' (CSP Level 2)."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode() \
        + "'"


# the page loads nothing; it runs its own two scripts and nothing else: no 'unsafe-inline' for
# scripts, so a script that an escaping slip let into the page would not run (the styles stay
# inline: the style sheet and the pictures' attributes)
POLICY = ("default-src 'none'; style-src 'unsafe-inline'; script-src "
          f"{script_hash(assets.ERROR_HOOK)} {script_hash(assets.JS)}; img-src data:")


def build(review, title: Optional[str] = None, stamp: Optional[str] = None) -> str:
    """The page for a review.Review. `stamp`: a line for the footer (a date, a commit), only
    when the caller asks for one."""
    from astral_dsl import __version__

    d = review.design
    errors = review.counts()[0]         # as the summary's card: a job not forecast too
    status = (tag("span", "valid", cls="status b-ok") if not errors else
              tag("span", f"{errors:,} error(s)", cls="status b-error"))
    title = title or f"Design review: {d.file}"
    sub = [f"astral_dsl {__version__}"]
    if review.overrides:
        sub.append("--set " + " ".join(f"{k}={v}" for k, v in review.overrides))
    if review.scenario:
        sub.append(f"scenario {review.scenario} beside the baseline")
    header = tag("header", tag("h1", esc(title) + status) + tag("div", esc(" · ".join(sub)),
                                                               cls="sub"), cls="top")
    toc_items = TOC + ((("diagnosis", "Diagnosis"),) if review.diagnosis else ())
    toc = tag("nav", "".join(tag("a", esc(t), href=f"#{sid}") for sid, t in toc_items),
              cls="toc")
    body = [sections.summary(review), sections.diagnostics(review),
            sections.scenario_matrix(review), sections.views(review)]
    if review.checked.engineering is not None:
        body += [sizing.sizing_section(review), sizing.pue_section(review),
                 sizing.bom_section(review)]
    body.append(jobs_section(review))
    if review.diagnosis:
        body.append(diagnosis_section(review.diagnosis))
    footer = tag("footer", esc(f"astral report · astral_dsl {__version__}"
                               + (f" · {stamp}" if stamp else "")))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
            f"<title>{esc(title)}</title><script>{assets.ERROR_HOOK}</script>"
            f"<style>{assets.CSS}</style></head><body>"
            + header + toc + tag("main", "".join(body)) + footer
            + f"<script>{assets.JS}</script></body></html>\n")
