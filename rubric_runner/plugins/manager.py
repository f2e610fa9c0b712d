"""The plugin manager: built-in plugins and entry-point plugins, loaded the same way."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

import pluggy

from ..environment import PLUGINS_ENV
from . import hookspecs

ENTRY_POINT_GROUP = "rubric_runner"

DEFAULT_PLUGINS = {"builtin_tools": "rubric_runner.plugins.builtin:TOOLS", "reports": "rubric_runner.plugins.builtin:REPORTS"}
"""The plugins that come with rubric_runner, by name (``module`` or ``module:object``): loaded like any other, always."""
PACKAGED_PLUGINS = {"syllables": "rubric_runner.plugins.syllables", "textstats": "rubric_runner.plugins.textstats"}
"""The tools of the bundled rubrics (haiku's, summary's), as plugins in the package: each loaded under its name
unless an installed package's entry point has that name (``plugins/`` holds them as packages of their own)."""

logger = logging.getLogger(__name__)


Hook = Literal["on_evaluation", "on_task_end", "on_run_end"]
"""The hooks a run calls with an event (``hookspecs``)."""


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    package: str
    version: str


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded, and why."""

    name: str
    error: str


def _allowed_entry_points() -> set[str] | None:
    value = os.environ.get(PLUGINS_ENV)
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def _own_version() -> str:
    try:
        return metadata.version("rubric_runner")
    except metadata.PackageNotFoundError:
        return "0+unknown"


_loaded: dict[str | None, Plugins] = {}


class Plugins:
    """Loads plugins once and remembers where each came from."""

    def __init__(self) -> None:
        self.manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.manager.add_hookspecs(hookspecs)
        self.info: dict[str, PluginInfo] = {}
        self.failures: list[PluginFailure] = []
        for name, location in DEFAULT_PLUGINS.items():
            module_name, _, attribute = location.partition(":")
            module = importlib.import_module(module_name)
            self._add(getattr(module, attribute) if attribute else module, PluginInfo(name, "rubric_runner", _own_version()))
        self._load_entry_points()

    def _add(self, plugin: object, info: PluginInfo) -> None:
        """Register ``plugin``; one that implements an unknown hook is taken out again."""
        self.manager.register(plugin, name=info.name)
        try:
            self.manager.check_pending()
        except pluggy.PluginValidationError:
            self.manager.unregister(plugin)
            raise
        self.info[info.name] = info

    def fail(self, name: str, error: str) -> None:
        """Record (and log a warning) that plugin ``name`` is unusable; everything else goes on."""
        logger.warning("plugin %r failed to load: %s", name, error)
        self.failures.append(PluginFailure(name, error))

    def _load_entry_points(self) -> None:
        allowed = _allowed_entry_points()
        installed = set()
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            installed.add(entry_point.name)
            if allowed is not None and entry_point.name not in allowed:
                continue
            if entry_point.name in self.info:
                self.fail(entry_point.name, "a plugin of that name is already loaded")
                continue
            dist = entry_point.dist
            info = PluginInfo(entry_point.name, dist.metadata["Name"] if dist else "?", dist.version if dist else "?")
            try:
                self._add(entry_point.load(), info)
            except Exception as exc:  # a broken plugin must not stop runs that don't need it
                self.fail(entry_point.name, f"{type(exc).__name__}: {exc}")
        for name, module in PACKAGED_PLUGINS.items():
            if name not in installed and (allowed is None or name in allowed):
                self._add(importlib.import_module(module), PluginInfo(name, "rubric_runner", _own_version()))
        for name in sorted((allowed or set()) - installed - set(PACKAGED_PLUGINS)):
            self.fail(name, f"no installed plugin has that name (named in {PLUGINS_ENV})")

    @classmethod
    def load(cls) -> Plugins:
        """The plugins of this process, loaded once per value of the environment variable."""
        key = os.environ.get(PLUGINS_ENV)
        if key not in _loaded:
            _loaded[key] = cls()
        return _loaded[key]

    def hook_functions(self, hook: Hook) -> list[tuple[str, Callable[..., Any]]]:
        """``(plugin name, function)`` of each plugin implementing ``hook``: the function takes the
        hook's keyword arguments and passes on those the plugin's implementation names."""

        def bound(impl: Any) -> Callable[..., Any]:
            return lambda **kwargs: impl.function(**{name: kwargs[name] for name in impl.argnames})

        return [(impl.plugin_name, bound(impl)) for impl in getattr(self.manager.hook, hook).get_hookimpls()]

    def register_commands(self, subparsers: Any) -> None:
        """Let every plugin add its commands; a plugin whose ``register_commands`` fails is reported
        and the other commands stay."""
        for impl in self.manager.hook.register_commands.get_hookimpls():
            try:
                impl.function(subparsers=subparsers)
            except Exception as exc:  # one plugin's broken command must not take the command line down
                self.fail(impl.plugin_name, f"register_commands failed: {type(exc).__name__}: {exc}")

    def plugin_name(self, plugin: object) -> str:
        """The registered name of a plugin object."""
        return self.manager.get_name(plugin) or repr(plugin)
