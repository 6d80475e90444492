"""The shape of the code, read from its source with ast (nothing is imported): which parts of
`compiler` import which, and what the solver's modules may hold.

A part is a subpackage (compiler.optimize, compiler.estimate, ...) or a top-level module
(compiler.pricing, compiler.plan, ...). Imports inside functions count: a function-local import
that only hides a cycle is still one.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "compiler"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 2 and (PKG / parts[1]).is_dir():
        return f"compiler.{parts[1]}"
    return ".".join(parts[:2])


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every compiler module `path` imports, absolute, with its line."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.append((".".join(base + ([node.module] if node.module else [])), node.lineno))
            elif node.module:
                out.append((node.module, node.lineno))
    return [(m, line) for m, line in out if m == "compiler" or m.startswith("compiler.")]


def part_graph() -> dict[str, dict[str, list[str]]]:
    """part -> imported part -> the `file:line`s that import it."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PKG.rglob("*.py")):
        a = _part(_module_name(path))
        for module, line in _imports(path):
            b = _part(module)
            if b != a and b != "compiler":
                graph[a][b].append(f"{path.relative_to(ROOT)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected parts of more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_sees_a_cycle():
    graph = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}, "d": {"a": ["w"]}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_graph_reads_function_local_imports():
    # estimate builds the options formulate prices: optimize imports estimate, inside a function
    # or not, and the graph sees it
    assert "compiler.estimate" in part_graph()["compiler.optimize"]


def test_no_import_cycle_between_compiler_parts():
    graph = part_graph()
    found = cycles(graph)
    where = [f"{a} -> {b}: {', '.join(graph[a][b][:3])}" for comp in found for a in comp for b in comp
             if b in graph.get(a, {})]
    assert not found, "import cycles between compiler parts:\n" + "\n".join(where)
