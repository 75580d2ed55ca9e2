"""The layout's promises, checked on the source: one-way imports, small modules.

Every ``import`` statement in ``bayesrank`` (and ``bayesrank.models``) counts,
including imports inside functions; only imports under ``if TYPE_CHECKING:``
are left out, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"bayesrank": ROOT / "bayesrank", "bayesrank.models": ROOT / "models"}
MAX_LINES = 800

# layers, lowest first: a module may import its own layer and the ones below
LAYERS = [
    ("bayesrank.errors", "bayesrank.checks", "bayesrank.datatree", "bayesrank.threads"),
    ("bayesrank.data", "bayesrank.datasets"),
    ("bayesrank.ranking", "bayesrank.conjugate"),
    ("bayesrank.baselines", "bayesrank.registry", "bayesrank.models",
     # compiled functions of a model, stored across processes, and its pointwise
     # log-likelihood: read by fits and by the analyses (PSIS-LOO block by block)
     "bayesrank.inference.cache", "bayesrank.inference.function_store",
     "bayesrank.inference.log_likelihood"),
    ("bayesrank.analysis",),
    ("bayesrank.inference",),
    ("bayesrank.schemes", "bayesrank.adaptive", "bayesrank.study", "bayesrank.report"),
    ("bayesrank.cli", "bayesrank"),
]


def _module_files() -> dict[str, Path]:
    files = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join((package, *parts))] = path
    return files


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            names = []
        for name in names:
            target = resolve(name)
            if target and target != module:
                found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    files = _module_files()
    g = nx.DiGraph()
    for module, path in files.items():
        g.add_node(module)
        for target in _imports(module, path, set(files)):
            # a module importing its own package's __init__ is the package re-exporting it
            if not module.startswith(f"{target}."):
                g.add_edge(module, target)
    return g


def test_no_import_cycles(graph):
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + [c[0]]) for c in cycles)


def _layer(module: str) -> int:
    best, depth = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    return best


def test_every_module_has_a_layer(graph):
    assert [m for m in graph if _layer(m) < 0] == []


def test_imports_point_down_the_layers(graph):
    upward = [
        f"{a} -> {b}" for a, b in graph.edges if _layer(b) > _layer(a) and b != "bayesrank"
    ]
    assert upward == []


def test_no_module_over_the_size_limit():
    long = {m: n for m, p in _module_files().items()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
