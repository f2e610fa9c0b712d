"""The reference parts of the docs, made from the code each time the site is built, so they cannot drift.

MkDocs runs this file as a hook (``hooks:`` in mkdocs.yml): every line ``<!-- generated: NAME [ARG] -->`` of a
page is replaced by what ``GENERATORS[NAME](ARG)`` returns. tests/support/readme.py expands pages the same
way, so the tests read what the site shows.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import inspect
import io
import os
import re
import textwrap
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rubric_runner"
MARK = re.compile(r"^<!-- generated: ([\w-]+)(?: ([\w.-]+))? -->$", re.MULTILINE)


def expand(markdown: str) -> str:
    """The page with each generated mark replaced by its text."""
    return MARK.sub(lambda m: GENERATORS[m.group(1)](*[a for a in m.groups()[1:] if a]).strip("\n"), markdown)


def on_page_markdown(markdown: str, **_: object) -> str:
    """MkDocs' hook: expand the page's generated marks."""
    return expand(markdown)


# --- reading the source ---------------------------------------------------------------------------------

def _class_node(cls: type) -> tuple[ast.ClassDef, list[str]]:
    lines, _ = inspect.getsourcelines(cls)
    source = textwrap.dedent("".join(lines))
    return ast.parse(source).body[0], source.splitlines()


def attribute_docs(cls: type) -> dict[str, str]:
    """Each attribute's docstring (the string right after it) in ``cls`` and its bases, as one line;
    else the ``#`` comment lines right above it."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if k.__module__.startswith("rubric_runner")]):
        node, lines = _class_node(klass)
        body = node.body
        for i, item in enumerate(body):
            target = item.target if isinstance(item, ast.AnnAssign) else (
                item.targets[0] if isinstance(item, ast.Assign) and len(item.targets) == 1 else None)
            if not isinstance(target, ast.Name):
                continue
            after = body[i + 1] if i + 1 < len(body) else None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                docs[target.id] = " ".join(after.value.value.split())
                continue
            comment, row = [], item.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#"):
                comment.insert(0, lines[row].strip().lstrip("#").strip())
                row -= 1
            if comment:
                docs[target.id] = " ".join(comment)
    return docs


def _code(text: object) -> str:
    """``text`` as an inline code span, whatever backticks it holds."""
    text = str(text).replace("\n", " ")
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _cell(text: str) -> str:
    """Text for a table cell: pipes and Markdown's special characters escaped outside code spans."""
    parts = re.split(r"(`+.*?`+)", text.replace("\n", " "))
    return "".join(part if part.startswith("`") else re.sub(r"([|*_\\])", r"\\\1", part).replace("<", "&lt;")
                   for part in parts)


def _value(value: object) -> str:
    """A default as YAML writes it."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if value == "???":
        return "required"
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    return str(value) if value != "" else '""'


def _type(hint: object) -> str:
    """A config type in words: ``float or null``, ``one of: auto, tool``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Union:
        return f"{_type(args[0])} or null"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of: " + ", ".join(member.value for member in hint)
    if typing.get_origin(hint) in (list, typing.List):
        return "list"
    if typing.get_origin(hint) in (dict, typing.Dict):
        return "mapping"
    return getattr(hint, "__name__", str(hint))


# --- configuration ---------------------------------------------------------------------------------------

def config_rows(schema: type | None = None, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """``(key, type, default, meaning)`` of every key of the structured config, in the schema's order."""
    if schema is None:
        from rubric_runner.config.schema import Config as schema
    hints, docs, rows = typing.get_type_hints(schema), attribute_docs(schema), []
    for field in dataclasses.fields(schema):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            rows += config_rows(hint, f"{prefix}{field.name}.")
            continue
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        rows.append((f"{prefix}{field.name}", _type(hint), _value(default), docs.get(field.name, "")))
    return rows


def _composed_defaults() -> dict[str, object]:
    """Each key's value in the config ``conf/config.yaml`` composes (its default presets), unresolved."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rubric_runner.config.compose import register_configs
    from rubric_runner.paths import CONF_DIR

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config")
    flat: dict[str, object] = {}

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict) and node and all(f"{key}{k}" not in {"worker.kwargs", "worker.tools"} for k in node):
            for name, value in node.items():
                walk(value, f"{key}.{name}" if key else name)
        else:
            flat[key] = node

    walk(OmegaConf.to_container(cfg, resolve=False), "")
    return flat


def config_keys() -> str:
    """The table of every config key: its type, its schema default, what the default presets set, its meaning."""
    composed = _composed_defaults()
    out = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, kind, default, meaning in config_rows():
        value = composed.get(key, default)
        preset = _value(value) if not isinstance(value, dict) else ", ".join(sorted(value)) or "{}"
        if len(preset) > 40:
            preset = preset[:37].rstrip() + "..."
        shown = _code(default) + (f" (presets: {_code(preset)})" if preset != default else "")
        out.append(f"| `{key}` | {_cell(kind)} | {shown} | {_cell(meaning)} |")
    return "\n".join(out) + "\n"


def config_groups() -> str:
    """The config groups of ``conf/``: each one's options, its default and what it is (from config.yaml's comments)."""
    conf = ROOT / "conf"
    chosen = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r"^\s+- ([\w/]+): (\w+)\s+# (.*)$", (conf / "config.yaml").read_text(encoding="utf-8"), re.MULTILINE)}
    out = ["| group | options | default | what it is |", "| --- | --- | --- | --- |"]
    for group, (default, meaning) in chosen.items():
        options = sorted(path.stem for path in (conf / group).glob("*.yaml"))
        out.append(f"| `{group}` | {', '.join(f'`{o}`' for o in options)} | `{default}` | {_cell(meaning)} |")
    return "\n".join(out) + "\n"


# --- plugins ---------------------------------------------------------------------------------------------

def hooks() -> list[str]:
    """The hook names, as ``plugins/hookspecs.py`` declares them."""
    from rubric_runner.plugins import hookspecs

    return [name for name, obj in vars(hookspecs).items() if hasattr(obj, "rubric_runner_spec")]


def hook_event(hook: str) -> type | None:
    """The ``plugins.events`` class an event hook is handed (named in its hookspec's docstring)."""
    from rubric_runner.plugins import events, hookspecs

    doc = getattr(hookspecs, hook).__doc__
    return next((getattr(events, name) for name in events.__all__ if f"``{name}``" in doc), None)


def hook(name: str) -> str:
    """A hook's heading, its hookspec's line, and for an event hook its event's fields."""
    from rubric_runner.plugins import hookspecs

    spec = getattr(hookspecs, name)
    out = [f"### {name}({', '.join(inspect.signature(spec).parameters)})", "", f"Hook spec: {_rst(spec.__doc__)}", ""]
    event = hook_event(name)
    if event is not None:
        what = re.sub(r"^`\w+\(event\)`: ", "", _rst(event.__doc__))
        out += [f"`event` is a frozen `rubric_runner.plugins.events.{event.__name__}`: {what}", "",
                "| field | type | what it is |", "| --- | --- | --- |"]
        docs, hints = attribute_docs(event), typing.get_type_hints(event)
        for field in dataclasses.fields(event):
            out.append(f"| `event.{field.name}` | `{getattr(hints[field.name], '__name__', hints[field.name])}` | "
                       f"{_cell(_rst(docs.get(field.name, '')))} |")
    return "\n".join(out) + "\n"


def _rst(text: str | None) -> str:
    """A docstring's reST literals as Markdown code, on one line."""
    return " ".join((text or "").split()).replace("``", "`")


# --- Python API ------------------------------------------------------------------------------------------

def _doc(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return "\n\n".join(_rst(part) for part in doc.split("\n\n"))


def api() -> str:
    """The functions and classes of ``rubric_runner.api``: signature and docstring."""
    import rubric_runner.api as module

    out = []
    names = sorted(module.__all__, key=lambda n: (not inspect.isfunction(getattr(module, n)),
                                                  inspect.getsourcelines(getattr(module, n))[1]))
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            out += [f"### rubric_runner.{name}", "", "```python", f"{name}{inspect.signature(obj)}".replace("'", ""),
                    "```", "", _doc(obj), ""]
        elif obj.__module__ == module.__name__ or name == "UsageError":
            out += [f"### {obj.__module__}.{name}", "", _doc(obj), ""]
            if dataclasses.is_dataclass(obj):
                out += [f"- `{f.name}`: `{f.type}`" for f in dataclasses.fields(obj)] + [""]
    return "\n".join(out)


def _models() -> list[type]:
    from pydantic import BaseModel

    from rubric_runner.records import models, status

    found = [obj for module in (models, status) for name, obj in vars(module).items()
             if inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
             and (issubclass(obj, BaseModel) or issubclass(obj, enum.Enum))]
    return found


def records() -> str:
    """Every record model (``rubric_runner.records``): its fields with their types, defaults and meaning;
    every enum with its members."""
    out = []
    for model in _models():
        docs = attribute_docs(model)
        out += [f"### {model.__name__}", "", _doc(model), ""]
        if issubclass(model, enum.Enum):
            out += ["| member | value | meaning |", "| --- | --- | --- |"]
            out += [f"| `{m.name}` | {_code(m.value)} | {_cell(_rst(docs.get(m.name, '')))} |" for m in model]
        else:
            annotations = _annotations(model)
            out += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
            for name, info in model.model_fields.items():
                default = "required" if info.is_required() else _value(
                    info.default_factory() if info.default_factory else info.default)
                out.append(f"| `{name}` | {_code(annotations.get(name, ''))} | {_code(default)} | "
                           f"{_cell(_rst(docs.get(name, '')))} |")
        methods = [(n, f) for n, f in vars(model).items() if inspect.isfunction(f) and not n.startswith("_")]
        out += [""] if methods else []
        for name, method in methods:
            summary = _rst((inspect.getdoc(method) or "").split("\n\n")[0])
            signature = str(inspect.signature(method)).replace("'", "")
            out.append(f"- `{name}{signature}`: {summary}")
        out.append("")
    return "\n".join(out)


def _annotations(model: type) -> dict[str, str]:
    """Each field's annotation as written in the source, bases included."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if klass.__module__.startswith("rubric_runner"):
            node, _ = _class_node(klass)
            found.update({item.target.id: ast.unparse(item.annotation) for item in node.body
                          if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)})
    return found


# --- command line ----------------------------------------------------------------------------------------

def cli() -> str:
    """``rubric-runner --help`` and each built-in command's ``--help``, as they print."""
    from rubric_runner.cli import build_parser, print_help

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"
    try:
        with contextlib.redirect_stdout(io.StringIO()) as top:
            print_help()
        out = ["## rubric-runner", "", "```text", top.getvalue().rstrip(), "```", ""]
        parser = build_parser(with_plugins=False)
        for name, command in sorted(parser.commands.items()):
            out += [f"## rubric-runner {name}", "", _rst(command.description or ""), "", "```text",
                    command.format_help().rstrip(), "```", ""]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(out)


# --- errors ----------------------------------------------------------------------------------------------

def _text(node: ast.AST, constants: dict[str, str]) -> str:
    """A message as the code builds it, each computed part shown as ``{expression}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else _text(part.value, constants)
                       for part in node.values)
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return "{" + ast.unparse(node) + "}"


def usage_errors() -> list[tuple[str, int, str]]:
    """``(file, line, "key: problem (fix)")`` of every one-line usage error the package can raise: each
    ``UsageError(key, problem, fix)``, each of Hydra's (``config/hydra_errors.py``) and each ``error: ...``
    line printed directly."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name)
                     and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            parts = None
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "UsageError":
                parts = node.args if len(node.args) == 3 else None
            elif isinstance(node, ast.Return) and path.name == "hydra_errors.py" and isinstance(node.value, ast.Tuple):
                parts = node.value.elts if len(node.value.elts) == 3 else None
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print" and node.args:
                text = _text(node.args[0], constants)
                if text.startswith("error: ") and not text.startswith("error: {"):
                    found.append((where, node.lineno, text.removeprefix("error: ")))
            if parts:
                key, problem, fix = (_text(part, constants) for part in parts)
                found.append((where, node.lineno, f"{key}: {problem} ({fix})" if key else f"{problem} ({fix})"))
    return sorted(found)


def errors() -> str:
    """Every one-line usage error, by the file that raises it."""
    out, current = [], None
    for where, line, text in usage_errors():
        if where != current:
            out += ["", f"### {where}", ""]
            current = where
        out.append(f"- {_code('error: ' + text)} (line {line})")
    return "\n".join(out).lstrip("\n") + "\n"


# --- modules ---------------------------------------------------------------------------------------------

def modules() -> str:
    """Every module of the package and the first line of its docstring."""
    out = ["| module | what it is |", "| --- | --- |"]
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        out.append(f"| `{name}` | {_cell(_rst(doc.split(chr(10) * 2)[0]))} |")
    return "\n".join(out) + "\n"


GENERATORS = {
    "config-keys": config_keys,
    "config-groups": config_groups,
    "hook": hook,
    "api": api,
    "records": records,
    "cli": cli,
    "errors": errors,
    "modules": modules,
}
