"""The package's layering: modules import one another without circles, and each wing (a subpackage or a
top-level module of ``rubric_runner/``) imports only the wings below it in ``WINGS``, the order that
docs/architecture.md states. Imports inside functions count, and so does a string that names a module of
the package whole (``"rubric_runner.plugins.builtin:TOOLS"``, what ``importlib`` loads: the default plugins,
the commands' handlers)."""

from __future__ import annotations

import ast
import re
import subprocess

from support.helpers import ROOT

PACKAGE = ROOT / "rubric_runner"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

WINGS = (
    "errors", "paths", "compat", "environment", "context", "redaction", "records", "config", "analysis",
    "sandbox", "tools", "models", "observe", "grader", "review", "report", "plugins", "tasks", "loop", "api",
    "__init__", "cli", "__main__",
)
"""The wings from the bottom up: each may import only those before it (``__init__`` is the package itself, the
API's face, whose version the command line prints)."""

TOP_LEVEL_MODULES = 8
"""At most this many modules sit at the top of the package, ``__init__`` and ``__main__`` included: a new
module joins a wing (docs/architecture.md says so)."""

MODULE_STRING = re.compile(r"(rubric_runner(?:\.\w+)+)(?::[\w.]+)?")


def _module(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing(module: str) -> str:
    """The wing of a module of the package: ``rubric_runner.loop.plan`` is in ``loop``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> dict[str, set[str]]:
    """For each module of the package, the package's modules it imports (``data/``'s files are data)."""
    modules = {_module(path): path for path in PACKAGE.rglob("*.py") if (path.parent / "__init__.py").exists()}
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
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value):
                candidates = [MODULE_STRING.fullmatch(node.value).group(1)]
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


def against_the_order(graph: dict[str, set[str]], order: tuple[str, ...] = WINGS) -> list[str]:
    """Each import of a wing by a wing at or below it in ``order``, as ``importer -> imported``."""
    rank = {name: index for index, name in enumerate(order)}
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if wing(module) != wing(target) and rank[wing(module)] <= rank[wing(target)])


def stated_order() -> tuple[str, ...]:
    """The wings as docs/architecture.md's table lists them, from the bottom up."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## Wings", 1)[1].split("\n## ", 1)[0]
    return tuple(re.findall(r"^\| `(?:rubric_runner/)?([\w]+)(?:/|\.py)?` \|", section, re.MULTILINE))


PUBLIC_UNDERSCORED = {"_exit", "_fields", "_asdict", "_replace", "_make", "_run", "_arun"}
"""Names with a leading underscore that are public API: ``os._exit``, a named tuple's methods, and the
methods LangChain's ``BaseTool`` asks a subclass to override."""


def library_state_keys() -> frozenset[str]:
    """RubricMiddleware's private state keys (``_rubric_status``, ``_current_grading_run_id``, ...)."""
    from deepagents.middleware.rubric import RubricState

    return frozenset(key for key in RubricState.__required_keys__ | RubricState.__optional_keys__ if key.startswith("_"))


def private_uses(path, state_keys: frozenset[str] = frozenset()) -> list[str]:
    """Where a module outside ``compat/`` imports a private module or name (a sibling module's too), reads a
    private attribute of anything but ``self`` or ``cls`` (``job_return._return_value``,
    ``Status._value2member_map_``), or names one of ``state_keys`` (a library's private state)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            names = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            if any(name.startswith("_") and not name.startswith("__") for name in names):
                found.append(f"{path.name}:{node.lineno} from {'.' * node.level}{node.module or ''} import")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in state_keys:
            found.append(f"{path.name}:{node.lineno} {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls") and node.attr not in PUBLIC_UNDERSCORED:
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


def test_the_graph_sees_the_imports():
    graph = imports()
    assert "rubric_runner.records.models" in graph["rubric_runner.records.store"]
    assert "rubric_runner.records" in graph["rubric_runner.loop.task"]
    assert "rubric_runner.plugins.builtin" in graph["rubric_runner.plugins.manager"]  # DEFAULT_PLUGINS, by name


def test_no_import_circles():
    assert circles(imports()) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_every_wing_imports_only_wings_below_it():
    graph = imports()
    assert {wing(module) for module in graph} == set(WINGS)
    assert against_the_order(graph) == []


def test_the_package_has_at_most_eight_top_level_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, top


def test_an_import_against_the_order_is_found():
    graph = {"p.low.a": {"p.high.b"}, "p.high.b": {"p.low.a"}, "p.low.c": {"p.low.a"}}
    assert against_the_order(graph, ("low", "high")) == ["p.low.a -> p.high.b"]


def test_a_string_naming_a_module_is_an_import():
    assert MODULE_STRING.fullmatch("rubric_runner.report.live:PLUGIN").group(1) == "rubric_runner.report.live"
    assert not MODULE_STRING.fullmatch("python -m rubric_runner.report.live")


def test_only_compat_uses_other_packages_private_parts():
    outside = [path for path in PACKAGE.rglob("*.py") if "compat" not in path.relative_to(PACKAGE).parts]
    keys = library_state_keys()
    assert {"_rubric_status", "_rubric_evaluations", "_current_grading_run_id"} <= keys
    assert [use for path in outside for use in private_uses(path, keys)] == []


def test_a_private_use_is_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from hydra._internal.utils import x\nfrom enum import _EnumDict\n"
                      "def f(job, status):\n    self = job\n    return job._return_value, status._value2member_map_, self._ok, os._exit\n"
                      "from .loop_value import Attempts, _by_group\nfrom . import _version\nstatus = state.get('_rubric_status')\n")
    assert private_uses(module, frozenset({"_rubric_status"})) == [
        "m.py:1 from hydra._internal.utils import", "m.py:2 from enum import", "m.py:6 from .loop_value import", "m.py:7 from . import",
        "m.py:8 '_rubric_status'", "m.py:5 ._return_value", "m.py:5 ._value2member_map_"]


def test_the_architecture_page_states_the_order():
    assert stated_order() == WINGS


def test_the_architecture_page_names_every_top_level_dir():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    dirs = {path.split("/")[0] for path in tracked if "/" in path}
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## The repository", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `([\w.]+)/` \|", section, re.MULTILINE)) == dirs


RATES = ("satisfied_rate", "gated_share", "satisfied_k", "pass_k", "pass_at", "pass_all")
"""The functions that compute a run's rates (``records/status.py``, ``records/passk.py``): the console, the
record's aggregate, the summaries, the reports, compare and ``sweep.fail_under`` all call them."""


def definitions(name: str, root=PACKAGE) -> list[str]:
    """The modules under ``root`` that define a function ``name``."""
    pattern = re.compile(rf"^\s*(?:async\s+)?def {name}\(", re.MULTILINE)
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.py") if pattern.search(path.read_text(encoding="utf-8")))


def test_each_rate_is_defined_once():
    assert {name: definitions(name) for name in RATES} == {
        "satisfied_rate": ["records/status.py"], "gated_share": ["records/status.py"], "satisfied_k": ["records/passk.py"],
        "pass_k": ["records/passk.py"], "pass_at": ["records/passk.py"], "pass_all": ["records/passk.py"],
    }


def test_a_second_definition_of_a_rate_is_found(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "stats.py").write_text("class Stats:\n    def satisfied_rate(self, runs):\n        return 0.0\n")
    (tmp_path / "status.py").write_text("def satisfied_rate(statuses):\n    return None\n")
    assert definitions("satisfied_rate", tmp_path) == ["report/stats.py", "status.py"]


PAIRED_TESTS = ("mcnemar", "sign_test", "paired_difference")
"""The paired interval and tests (``analysis/intervals.py``): the lift, the loop's arms, the policies and
compare reach them through one engine, ``analysis/paired.py``."""


def callers(name: str, root=PACKAGE, home: str = "analysis/intervals.py") -> list[str]:
    """The modules under ``root`` but ``home`` (where the tests are defined) that call ``name``."""
    pattern = re.compile(rf"(?<!def )\b{name}\(")
    return sorted(found for path in root.rglob("*.py")
                  if (found := str(path.relative_to(root))) != home and pattern.search(path.read_text(encoding="utf-8")))


def test_one_paired_engine_calls_the_paired_tests():
    assert {name: callers(name) for name in PAIRED_TESTS} == dict.fromkeys(PAIRED_TESTS, ["analysis/paired.py"])


def test_a_run_becomes_a_rating_in_one_place():
    # agreement.md's ratings and the report's people and self tables read the runs the reports count
    assert callers("Rating", home="analysis/agreement.py") == ["report/runs.py"]


ROW_BY_KEY = re.compile(r"\b(?:row|g|group|cell|c)\[[\"']")
"""A report row, a configuration's figures or a matrix cell read by a string key."""


def test_report_rows_are_typed_not_read_by_string_keys():
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in sorted((PACKAGE / "report").glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if ROW_BY_KEY.search(line)]
    assert found == []
    assert ROW_BY_KEY.search('Column("k", lambda g: g["k"] or "-")') and not ROW_BY_KEY.search("lambda g: g.k or '-'")


LAYOUT_NAMES = {"TASKS_DIR", "TURNS_DIR", "REGRADES_DIR"}
"""The names of a run dir's own dirs (``records/layout.py``)."""


def spelled_layout(root=PACKAGE, home: str = "records/layout.py") -> list[str]:
    """Where a module under ``root`` but ``home`` names a run dir's own dirs: a layout constant, or the literal
    ``"turns"`` or ``"regrades"``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = str(path.relative_to(root))
        if where == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = isinstance(node, ast.Name) and node.id in LAYOUT_NAMES
            spelled = isinstance(node, ast.Constant) and node.value in ("turns", "regrades")
            if named or spelled:
                found.append((where, node.lineno))
    return [f"{where}:{line}" for where, line in sorted(found)]


def test_only_the_layout_spells_a_run_dirs_paths():
    # the loop, the reports, the review page and follow-ups ask records.layout where a record goes
    assert spelled_layout() == []


def test_a_path_spelled_outside_the_layout_is_found(tmp_path):
    (tmp_path / "turn.py").write_text('TURN = run_dir / TURNS_DIR / "2"\nREGRADES = run_dir / "regrades"\n', encoding="utf-8")
    assert spelled_layout(tmp_path) == ["turn.py:1", "turn.py:2"]
