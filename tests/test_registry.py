"""The method table: one explicit entry per identifier, *_map as configurations, no cycles."""

from __future__ import annotations

import ast
import csv
import inspect
from pathlib import Path

import numpy as np
import pytest

import bayesrank
from bayesrank import ResponseData, UnknownMethodError
from bayesrank.baselines import METHODS
from bayesrank.registry import get_method

PACKAGE = Path(bayesrank.__file__).resolve().parent
MAP = sorted(i for i in METHODS if i.endswith("_map"))
FAMILIES = {"graph", "irt", "luce", "metrics", "paired", "ratings", "voting"}


def _simulated(seed: int = 0, L: int = 5, M: int = 16, N: int = 4) -> ResponseData:
    """Binary logistic data on which every ML rule (3PL included) has a finite answer."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.0, 1.0, L)
    p = 1 / (1 + np.exp(-(ability[:, None] - rng.normal(0, 1.0, M)[None, :])))
    return ResponseData((rng.random((L, M, N)) < p[..., None]).astype(np.int8))


DATA = _simulated()


def test_every_paper_identifier_is_in_the_table(shared_dir):
    with open(shared_dir / "spec" / "paper_methods.tsv") as fh:
        paper = [row["identifier"] for row in csv.DictReader(fh, delimiter="\t")]
    assert len(paper) == len(set(paper)) == 72
    missing = [i for i in paper if i not in METHODS]
    assert not missing, missing
    assert {i for i, s in METHODS.items() if s.in_paper} == set(paper)


def test_table_is_read_only_and_keyed_by_identifier():
    with pytest.raises(TypeError):
        METHODS["avg2"] = METHODS["avg"]  # type: ignore[index]
    with pytest.raises(TypeError):
        METHODS["avg"].defaults["k"] = 3  # type: ignore[index]
    assert all(spec.identifier == identifier for identifier, spec in METHODS.items())
    assert bayesrank.methods()["identifier"].tolist() == list(METHODS)


@pytest.mark.parametrize("identifier", list(METHODS))
def test_entry_points_at_a_rule_of_its_family_with_real_parameters(identifier):
    spec = METHODS[identifier]
    assert spec.family in FAMILIES
    assert spec.function.__module__.startswith(f"bayesrank.baselines.{spec.family}")
    parameters = inspect.signature(spec.function.__wrapped_rule__).parameters
    unknown = set(spec.defaults) - set(parameters)
    assert not unknown, f"{identifier} passes {unknown}, which {spec.base} does not take"


def test_map_identifiers_exist_for_every_family_that_has_them():
    assert MAP == sorted(
        ["bradley_terry_map", "bradley_terry_davidson_map", "rao_kupper_map",
         "plackett_luce_map", "bradley_terry_luce_map", "davidson_luce_map",
         "rasch_map", "rasch_2pl_map", "rasch_3pl_map"]
    )


@pytest.mark.parametrize("identifier", MAP)
def test_map_is_its_base_rule_with_a_prior(identifier):
    spec, base = METHODS[identifier], METHODS[identifier.removesuffix("_map")]
    assert spec.function is base.function
    assert spec.base == base.base == identifier.removesuffix("_map")
    assert spec.defaults["prior"] == 1.0 and base.defaults.get("prior") is None
    others = {k: v for k, v in spec.defaults.items() if k != "prior"}
    assert others == {k: v for k, v in base.defaults.items() if k in others}


@pytest.mark.parametrize("identifier", MAP)
def test_map_ranking_equals_the_base_rule_called_with_the_map_options(identifier):
    spec = METHODS[identifier]
    ours = bayesrank.rank(DATA, identifier)
    direct = spec.function(DATA, **spec.defaults)
    np.testing.assert_array_equal(ours.scores, direct.scores)
    np.testing.assert_array_equal(ours.ranks, direct.ranks)
    assert ours.method == identifier
    via_base = bayesrank.rank(DATA, identifier.removesuffix("_map"), prior=1.0)
    np.testing.assert_array_equal(via_base.scores, ours.scores)
    # the prior does something: the MAP scores are not the ML scores
    ml = bayesrank.rank(DATA, identifier.removesuffix("_map"))
    assert not np.allclose(ours.scores, ml.scores)


def test_unknown_identifier_suggests_close_names():
    with pytest.raises(UnknownMethodError, match="did you mean.*bradley_terry_map"):
        get_method("bradley_terry_mapp")


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at top level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_baselines_never_import_the_registry():
    files = sorted((PACKAGE / "baselines").rglob("*.py"))
    assert len(files) >= 10
    for path in files:
        bad = {m for m in _imports(path) if m.startswith("bayesrank.registry")}
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}: a registry cycle"


def test_checks_module_depends_on_nothing_but_the_errors():
    inside = {m for m in _imports(PACKAGE / "checks.py") if m.startswith("bayesrank")}
    assert inside <= {"bayesrank.errors", "bayesrank.errors.DataError"}


def test_no_baseline_module_is_over_800_lines():
    sizes = {p.relative_to(PACKAGE): len(p.read_text().splitlines())
             for p in (PACKAGE / "baselines").rglob("*.py")}
    assert max(sizes.values()) <= 800, sizes
