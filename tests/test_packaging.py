"""The wheel must contain every subpackage: pyproject's explicit package list is checked here."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    source = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    found = set()
    for name, folder in source.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            if "__pycache__" not in parts:
                found.add(".".join((name, *parts)))
    assert found == set(setuptools["packages"])
