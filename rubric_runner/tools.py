"""The tool registry: tools registered by plugins, looked up by the names configs use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_tool
from pydantic import TypeAdapter, ValidationError

from .config import ConfigError
from .plugins import Plugins


@dataclass(frozen=True)
class ToolEntry:
    """A registered tool and where it came from."""

    name: str
    tool: BaseTool
    plugin: str
    package: str
    version: str

    @property
    def qualified_name(self) -> str:
        """``plugin/tool``: unique even when two plugins use the same tool name."""
        return f"{self.plugin}/{self.name}"


class ToolRegistry:
    """Every tool the loaded plugins register, by bare and by qualified name."""

    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins
        self.entries: dict[str, ToolEntry] = {}
        for impl in plugins.manager.hook.register_tools.get_hookimpls():
            info = plugins.info[impl.plugin_name]
            impl.function(register=self._registrar(info))

    def _registrar(self, info):
        def register(tool: Any, name: str | None = None) -> None:
            if not isinstance(tool, BaseTool):
                if not callable(tool):
                    raise TypeError(f"plugin {info.name!r} registered {tool!r}, which is not a tool")
                tool = as_tool(tool)
            entry = ToolEntry(name or tool.name, tool, info.name, info.package, info.version)
            if entry.qualified_name in self.entries:
                raise ValueError(f"plugin {info.name!r} registered tool {entry.name!r} twice")
            self.entries[entry.qualified_name] = entry

        return register

    def find(self, name: str, key: str) -> ToolEntry:
        """The entry for ``name`` (bare or ``plugin/tool``); ``key`` names the config key."""
        if name in self.entries:
            return self.entries[name]
        matches = [entry for entry in self.entries.values() if entry.name == name]
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = " or ".join(entry.qualified_name for entry in matches)
            plugins = " and ".join(repr(entry.plugin) for entry in matches)
            raise ConfigError(key, f"tool {name!r} is provided by plugins {plugins}", f"name it as {names}")
        known = ", ".join(sorted({entry.name for entry in self.entries.values()})) or "none"
        raise ConfigError(key, f"unknown tool {name!r}", f"available tools: {known}; see `rubric-runner tools`")

    def resolve(self, spec: Mapping[str, Any], role: str) -> list[BaseTool]:
        """Tools for ``{name: settings}`` from config, each with its settings bound."""
        tools = []
        for name, settings in spec.items():
            key = f"{role}.tools.{name}"
            entry = self.find(name, key)
            tools.append(bind_settings(entry.tool, dict(settings or {}), key))
        return tools


def tool_settings(tool: BaseTool) -> dict[str, Any]:
    """The tool's settings: injected arguments the model never sees, with their fields."""
    visible = set(tool.tool_call_schema.model_fields) if hasattr(tool.tool_call_schema, "model_fields") else set()
    fields = tool.get_input_schema().model_fields
    return {name: field for name, field in fields.items() if name not in visible}


def bind_settings(tool: BaseTool, settings: dict[str, Any], key: str) -> BaseTool:
    """A copy of ``tool`` whose hidden (injected) arguments take values from config."""
    fields = tool_settings(tool)
    for name, value in settings.items():
        if name not in fields:
            allowed = ", ".join(sorted(fields)) or "none"
            raise ConfigError(f"{key}.{name}", f"tool {tool.name!r} has no setting {name!r}", f"settings: {allowed}")
        try:
            field = fields[name]
            annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
            settings[name] = TypeAdapter(annotation).validate_python(value)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            raise ConfigError(f"{key}.{name}", f"{problem}, got {value!r}", "fix the setting's value") from None
    missing = [name for name, field in fields.items() if field.is_required() and name not in settings]
    if missing:
        raise ConfigError(f"{key}.{missing[0]}", "required setting is missing", f"set {key}.{missing[0]}")
    if not settings:
        return tool

    # The wrapper is the tool callbacks see; the inner call stays silent so it is recorded once.
    silent = {"callbacks": []}

    def call(**arguments: Any) -> Any:
        return tool.invoke({**arguments, **settings}, config=silent)

    async def acall(**arguments: Any) -> Any:
        return await tool.ainvoke({**arguments, **settings}, config=silent)

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=tool.name,
        description=tool.description,
        args_schema=tool.tool_call_schema,
    )
