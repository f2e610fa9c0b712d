"""The package's modules import one another without circles (imports inside functions count too)."""

from __future__ import annotations

import ast

from support.helpers import ROOT

PACKAGE = ROOT / "rubric_runner"


def _module(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """For each module of the package, the package's modules it imports."""
    modules = {_module(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                target = ".".join(part for part in (base, node.module) if part)
                # `from X import name`: the module X.name where there is one, else X itself
                candidates = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target for alias in node.names]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            found |= {candidate for candidate in candidates if candidate in modules and candidate != name}
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, each as the modules along it."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                found.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_graph_sees_the_imports():
    graph = imports()
    assert "rubric_runner.records.models" in graph["rubric_runner.records.store"]
    assert "rubric_runner.records" in graph["rubric_runner.loop.task"]


def test_no_import_circles():
    assert circles(imports()) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
