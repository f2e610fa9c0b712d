"""The tool registry: tools registered by plugins, looked up by the names configs use."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool
from langchain_core.tools import tool as as_tool
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from ..context import current_task
from ..errors import UsageError
from ..tools.files import FromState
from .extensions import locate
from .manager import PLUGINS_ENV, Plugins


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
            registered: dict[str, ToolEntry] = {}
            try:
                impl.function(register=self._registrar(info, registered))
            except Exception as exc:  # one plugin's bad registration must not stop the others
                plugins.fail(info.name, f"register_tools failed: {type(exc).__name__}: {exc}")
                continue
            self.entries.update(registered)

    @staticmethod
    def _registrar(info, registered: dict[str, ToolEntry]):
        def register(tool: Any, name: str | None = None) -> None:
            tool = langchain_tool(tool)
            if name and name != tool.name:
                tool = tool.model_copy(update={"name": name})
            if "." in tool.name:
                raise ValueError(f"tool name {tool.name!r} has a dot (a dotted name in config is an import path)")
            entry = ToolEntry(tool.name, tool, info.name, info.package, info.version)
            if entry.qualified_name in registered:
                raise ValueError(f"tool {entry.name!r} registered twice")
            registered[entry.qualified_name] = entry

        return register

    def find(self, name: str, key: str) -> ToolEntry:
        """The entry for ``name`` (bare, ``plugin/tool`` or the import path ``module.tool``); ``key``
        names the config key."""
        if "." in name and "/" not in name:
            return local_tool(name, key)
        if name in self.entries:
            return self.entries[name]
        matches = sorted((entry for entry in self.entries.values() if entry.name == name), key=lambda e: e.plugin)
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = " or ".join(entry.qualified_name for entry in matches)
            plugins = " and ".join(f"{entry.plugin!r} (package {entry.package} {entry.version})" for entry in matches)
            parent = key.rsplit(".", 1)[0]
            example = f"~{key} '+{parent}={{{matches[0].qualified_name}: {{...}}}}'"
            raise UsageError(
                key, f"tool {name!r} is provided by plugins {plugins}",
                f"uninstall the package you do not want (or leave its plugin out of {PLUGINS_ENV}), "
                f"or name it as {names}, e.g. {example}",
            )
        known = ", ".join(sorted({entry.name for entry in self.entries.values()})) or "none"
        allowed = os.environ.get(PLUGINS_ENV)
        hint = f"; {PLUGINS_ENV}={allowed!r} limits which plugins load" if allowed is not None else ""
        raise UsageError(
            key, f"unknown tool {name!r}", f"available tools: {known}; install the plugin that provides it{hint}"
        )

    def resolve(self, spec: Mapping[str, Any], role: str, rubric: str | None = None) -> list[BaseTool]:
        """Tools for ``{name: settings}`` from config (of the rubric named ``rubric``), each with its settings bound."""
        tools: dict[str, BaseTool] = {}
        for name, settings in spec.items():
            key = f"{role}.tools.{name}"
            entry = self.find(name, key)
            if entry.name in tools:
                raise UsageError(key, f"{role} already has a tool named {entry.name!r}", "give it only one of them")
            tools[entry.name] = bind_settings(entry.tool, dict(settings or {}), key, rubric)
        return list(tools.values())


def langchain_tool(value: Any) -> BaseTool:
    """``value`` as a LangChain tool: a ``BaseTool`` as it is, a function wrapped with ``@tool``."""
    if isinstance(value, BaseTool):
        return value
    if not callable(value):
        raise TypeError(f"{value!r} is not a tool")
    return as_tool(value)


def local_tool(path: str, key: str) -> ToolEntry:
    """The tool at the import path ``module.tool``, for config that names a tool no plugin registers."""
    found = locate(path, key)
    try:
        tool = langchain_tool(found)
    except (TypeError, ValueError) as exc:
        raise UsageError(key, f"{path!r} is not a tool: {exc}", "name a @tool or a function with a docstring") from None
    module = path.rsplit(".", 1)[0]
    return ToolEntry(tool.name, tool, plugin="local", package=module, version="")


def _input_fields(tool: BaseTool) -> dict[str, FieldInfo]:
    """The fields of the tool's input schema, a pydantic v2 model (langchain_core's type admits v1 ones too)."""
    return cast(type[BaseModel], tool.get_input_schema()).model_fields


def tool_settings(tool: BaseTool) -> dict[str, Any]:
    """The tool's settings: injected arguments the model never sees, with their fields (not those the
    agent's state fills, ``state_arguments``)."""
    visible = set(tool.tool_call_schema.model_fields) if hasattr(tool.tool_call_schema, "model_fields") else set()
    fields = _input_fields(tool)
    state = state_arguments(tool)
    return {name: field for name, field in fields.items() if name not in visible and name not in state}


def state_arguments(tool: BaseTool) -> dict[str, Any]:
    """The tool's arguments the agent's state fills (``FromState``), with their fields."""
    fields = _input_fields(tool)
    return {name: field for name, field in fields.items() if any(isinstance(item, FromState) for item in field.metadata)}


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any) -> TypeAdapter:
    """A setting type's validator, built once: building one takes a millisecond, and every task of a run needs it."""
    return TypeAdapter(annotation)


def validate_settings(tool: BaseTool, settings: dict[str, Any], key: str, rubric: str | None = None) -> dict[str, Any]:
    """``settings`` checked against the tool's setting fields; ``key`` names the config key, ``rubric`` the
    rubric whose tools they are."""
    fields = tool_settings(tool)
    checked = {}
    for name, value in settings.items():
        if name not in fields:
            allowed = ", ".join(sorted(fields)) or "none"
            raise UsageError(f"{key}.{name}", f"tool {tool.name!r} has no setting {name!r}", f"settings: {allowed}")
        field = fields[name]
        annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        try:
            checked[name] = _adapter(annotation).validate_python(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            if error["type"] == "value_error":  # the tool's own check, whose message names what is wrong
                problem = error["msg"].removeprefix("Value error, ")
                raise UsageError(f"{key}.{name}", f"rubric {rubric!r}: {problem}" if rubric else problem,
                                 "fix the setting's value") from None
            raise UsageError(f"{key}.{name}", f"{error['msg']}, got {value!r}", "fix the setting's value") from None
    return checked


def bind_settings(tool: BaseTool, settings: dict[str, Any], key: str, rubric: str | None = None) -> BaseTool:
    """A copy of ``tool`` whose hidden (injected) arguments take values from config, and whose calls, when it
    has no coroutine of its own, run on a daemon thread (``off_the_loop``).

    The current task (``context.current_task()``) may override the settings per call.
    """
    fields = tool_settings(tool)
    settings = validate_settings(tool, settings, key, rubric)
    missing = [name for name, field in fields.items() if field.is_required() and name not in settings]
    if missing:
        raise UsageError(f"{key}.{missing[0]}", "required setting is missing", f"set {key}.{missing[0]}")
    asynchronous = has_coroutine(tool)
    state = state_arguments(tool)
    if not fields and asynchronous and not state:
        return tool
    schema = tool.tool_call_schema
    if state:  # the wrapper takes them as LangGraph's InjectedState, so the tool node fills them from the state
        from langgraph.prebuilt import InjectedState
        from pydantic import create_model

        injected: dict[str, Any] = {
            name: (Annotated[field.annotation, InjectedState(next(m.key for m in field.metadata if isinstance(m, FromState)))],
                   field.default) for name, field in state.items()}
        # langchain_core's type admits a JSON Schema dict too; a tool with state arguments has a pydantic model
        schema = create_model(f"{tool.name}_call", __base__=cast(type[BaseModel], schema), **injected)
    # The wrapper is the tool callbacks see; the inner call stays silent so it is recorded once.
    silent: RunnableConfig = {"callbacks": []}

    def effective(arguments: dict[str, Any]) -> dict[str, Any]:
        task = current_task()
        overrides = task.tool_settings.get(tool.name, {}) if task else {}
        return {**arguments, **settings, **overrides}

    def call(**arguments: Any) -> Any:
        return tool.invoke(effective(arguments), config=silent)

    async def acall(**arguments: Any) -> Any:
        if asynchronous:
            return await tool.ainvoke(effective(arguments), config=silent)
        return await off_the_loop(call, arguments, tool.name)

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=tool.name,
        description=tool.description,
        args_schema=schema,
    )


def has_coroutine(tool: BaseTool) -> bool:
    """Whether ``tool`` runs on the event loop when awaited (else LangChain runs it in the loop's thread pool)."""
    if isinstance(tool, StructuredTool | Tool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


async def off_the_loop(function: Any, arguments: dict[str, Any], name: str) -> Any:
    """``function(**arguments)`` on a daemon thread of its own (named after the tool ``name``), in a copy of
    this context, awaited.

    A tool that never returns must not hold its run: a limit that cancels the await leaves the thread behind,
    and the process never waits for a daemon thread at exit (it joins the threads of a thread pool).
    """
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if not future.done():  # cancelled by a limit or a stop
            future.set_exception(error) if error is not None else future.set_result(result)

    def target() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (context.run(function, **arguments), None)
        except BaseException as exc:
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop has closed: nobody waits for the call any more
            pass

    threading.Thread(target=target, name=f"tool {name}", daemon=True).start()
    return await future
