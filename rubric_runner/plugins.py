"""The plugin manager: built-in plugins and entry-point plugins, loaded the same way."""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass
from importlib import metadata

import pluggy

from . import hookspecs

ENTRY_POINT_GROUP = "rubric_runner"
PLUGINS_ENV = "RUBRIC_RUNNER_PLUGINS"
"""Comma-separated entry-point plugin names to load; unset loads all, empty loads none."""

DEFAULT_PLUGINS = ("rubric_runner.builtin_tools",)

logger = logging.getLogger(__name__)


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
        for module_name in DEFAULT_PLUGINS:
            module = importlib.import_module(module_name)
            self._add(module, PluginInfo(module_name.rsplit(".", 1)[-1], "rubric_runner", _own_version()))
        self._load_entry_points()
        self.manager.check_pending()

    def _add(self, plugin: object, info: PluginInfo) -> None:
        self.manager.register(plugin, name=info.name)
        self.info[info.name] = info

    def _load_entry_points(self) -> None:
        allowed = _allowed_entry_points()
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if allowed is not None and entry_point.name not in allowed:
                continue
            if entry_point.name in self.info:
                self.failures.append(
                    PluginFailure(entry_point.name, "a plugin of that name is already loaded")
                )
                continue
            try:
                plugin = entry_point.load()
            except Exception as exc:  # a broken plugin must not stop runs that don't need it
                logger.warning("plugin %r failed to load: %s: %s", entry_point.name, type(exc).__name__, exc)
                self.failures.append(PluginFailure(entry_point.name, f"{type(exc).__name__}: {exc}"))
                continue
            dist = entry_point.dist
            self._add(
                plugin,
                PluginInfo(
                    entry_point.name,
                    dist.metadata["Name"] if dist else "?",
                    dist.version if dist else "?",
                ),
            )

    @classmethod
    def load(cls) -> Plugins:
        """The plugins of this process, loaded once per value of the environment variable."""
        key = os.environ.get(PLUGINS_ENV)
        if key not in _loaded:
            _loaded[key] = cls()
        return _loaded[key]

    def plugin_name(self, plugin: object) -> str:
        """The registered name of a plugin object."""
        return self.manager.get_name(plugin) or repr(plugin)
