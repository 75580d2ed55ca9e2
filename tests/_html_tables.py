"""Tables of a written HTML report, read with the standard library's parser."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class _Tables(HTMLParser):
    """Collect the text of every table cell, by table id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self._table = attrs.get("id", f"table{len(self.tables)}")
            self.tables[self._table] = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append("".join(self._cell or []).strip())
            self._cell = None
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append(self._row or [])
            self._row = None

    def handle_data(self, text):
        if self._cell is not None:
            self._cell.append(text)


def parse(path: Path) -> _Tables:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser
