"""The report layer: render a fitted posterior (never fits).

:func:`write_report` / :func:`render_report` (:mod:`.html`) produce a
self-contained HTML report (of a suite: :mod:`.suite`); :mod:`.plots` draws the figures.
"""

from bayesrank.report.html import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_OPTIONS,
    ReportOptions,
    default_model,
    render_report,
    write_report,
)
from bayesrank.report.suite import render_suite_report  # registers the suite's report

__all__ = [
    "DEFAULT_MODEL", "DEFAULT_MODEL_OPTIONS", "ReportOptions", "default_model", "render_report",
    "render_suite_report", "write_report",
]
