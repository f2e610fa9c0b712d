"""``rubric-runner tools``, ``plugins`` and ``doctor``: what is installed, where it came from, what works here."""

from __future__ import annotations

import argparse
import shutil
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin


def _type_name(annotation: Any) -> str:
    """A short, readable type (``list[int] | None``), constraints left out."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin in (Union, UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None and args:
        inner = ", ".join("..." if arg is Ellipsis else _type_name(arg) for arg in args)
        return f"{getattr(origin, '__name__', origin)}[{inner}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def tools(args: argparse.Namespace) -> int:
    """Print every available tool, with its settings (the config keys it takes)."""
    from ..plugins.manager import Plugins
    from ..plugins.registry import ToolRegistry, tool_settings

    registry = ToolRegistry(Plugins())
    entries = sorted(registry.entries.values(), key=lambda entry: (entry.name, entry.plugin))
    names = [entry.name for entry in entries]
    for entry in entries:
        shared = names.count(entry.name) > 1
        label = f"{entry.qualified_name}  (name shared with another plugin)" if shared else entry.name
        print(f"{label}\n  plugin {entry.plugin}, package {entry.package} {entry.version}")
        for line in entry.tool.description.strip().split("\n\n", 1)[0].splitlines():
            print(f"  {line.strip()}")
        settings = tool_settings(entry.tool)
        if settings:
            print("  settings:")
        for name, field in settings.items():
            default = "required" if field.is_required() else f"default {field.default!r}"
            about = f" - {field.description}" if field.description else ""
            print(f"    {name}: {_type_name(field.annotation)} ({default}){about}")
    if not entries:
        print("no tools: no plugin registered any")
    return 0


def plugins(args: argparse.Namespace) -> int:
    """Print the loaded plugins with their packages and versions, then any that failed."""
    from ..plugins.manager import Plugins
    from ..plugins.registry import ToolRegistry

    loaded = Plugins()
    ToolRegistry(loaded)  # a plugin whose register_tools fails shows up among the failures
    width = max(len(name) for name in loaded.info)
    for info in loaded.info.values():
        print(f"{info.name:<{width}}  {info.package} {info.version}")
    for failure in loaded.failures:
        print(f"{failure.name:<{width}}  FAILED: {failure.error}")
    return 0


BACKENDS = {
    "bwrap": "bubblewrap, any user",
    "namespaces": "Linux namespaces, root only",
    "none": "no isolation, only when asked for by name",
}


def _try_backend(backend: str) -> str:
    """Whether ``backend`` runs a trivial test here, and how long it took."""
    from ..sandbox import Limits, isolation_setting, run_cases, unavailable

    problem = unavailable(backend)
    if problem is not None:
        return f"unavailable: {problem}"
    with isolation_setting(backend):
        result = run_cases("def f():\n    return 1\n", "f", [{"name": "f", "expected": 1}], Limits())
    if not result["ok"]:
        return f"unavailable: {'; '.join(result['failures'])}"
    return f"works: a trivial test ran in {result['duration_s']:.2f} s"


def doctor(args: argparse.Namespace) -> int:
    """Say which sandbox backends run code on this machine, and what ``auto`` picks (exit 1: nothing isolates)."""
    from ..sandbox import choose
    from ..sandbox.bwrap import version

    print("sandbox.isolation (how run_test_suite and plugin tools isolate generated code):")
    for backend, about in BACKENDS.items():
        print(f"  {backend:<11} {_try_backend(backend)}  ({about})")
    found = shutil.which("bwrap")
    print(f"bubblewrap: {version(found)} at {found}" if found else "bubblewrap: not on PATH")
    choice = choose("auto")
    if choice.backend is None:
        print(f"auto: refuses to run code: {choice.refusal}")
        return 1
    print(f"auto: {choice.backend}")
    return 0
