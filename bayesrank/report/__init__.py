"""The report layer: render a fitted posterior (never fits).

:func:`write_report` / :func:`render_report` (:mod:`.html`) produce a
self-contained HTML report; :mod:`.plots` draws the figures.
"""

from bayesrank.report.html import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_OPTIONS,
    ReportOptions,
    default_model,
    render_report,
    write_report,
)

__all__ = [
    "DEFAULT_MODEL", "DEFAULT_MODEL_OPTIONS", "ReportOptions", "default_model", "render_report",
    "write_report",
]
