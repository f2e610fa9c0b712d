"""Code that config plugs into the loop by import path: evaluation callbacks, middleware and the
grader's transcript and state hooks, each resolved and checked before any model call."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from ..config.schema import Config
from ..errors import UsageError
from .events import GradingPassed, RunEnded, TaskEnded
from .manager import Hook, Plugins

IMPORT_HINT = "a dotted path such as my_module.name; a module in the working directory needs PYTHONPATH=."
MIDDLEWARE_EXAMPLE = "e.g. {_target_: langchain.agents.middleware.ModelCallLimitMiddleware, run_limit: 5}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def locate(path: Any, key: str) -> Any:
    """The object at the dotted ``path`` (``package.module.name``); ``key`` names the config key."""
    if not isinstance(path, str) or "." not in path.strip(".") or " " in path:
        raise UsageError(key, f"{path!r} is not a dotted import path", IMPORT_HINT)
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            found: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
                continue  # not a module: maybe an attribute of a shorter one
            raise UsageError(key, f"importing {module_name!r} failed: {_one_line(exc)}", "fix that module") from None
        except Exception as exc:  # whatever the module raises on import
            raise UsageError(key, f"importing {module_name!r} failed: {_one_line(exc)}", "fix that module") from None
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                raise UsageError(key, f"{module_name!r} has no {'.'.join(parts[split:])!r}", IMPORT_HINT)
            found = getattr(found, attribute)
        return found
    raise UsageError(key, f"cannot import {path!r}: no module named {parts[0]!r}", IMPORT_HINT)


def _callable(path: str, key: str, *args: str, **kwargs: Any) -> Callable[..., Any]:
    """The function at ``path``, checked to take ``args`` positionally and ``kwargs`` by keyword."""
    function = locate(path, key)
    if not callable(function):
        raise UsageError(key, f"{path!r} is a {type(function).__name__}, not a function", IMPORT_HINT)
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError:
        wanted = ", ".join([*args, *(f"{name}=" for name in kwargs)])
        raise UsageError(key, f"{path!r} cannot be called as {path.rsplit('.', 1)[-1]}({wanted})",
                          "give it those parameters") from None
    except ValueError:  # no signature to check (some builtins): trust it
        pass
    return function


def _state_schema(path: str | None, key: str) -> type | None:
    if path is None:
        return None
    schema = locate(path, key)
    if not isinstance(schema, type):
        raise UsageError(key, f"{path!r} is not a class", "name a TypedDict, dataclass or pydantic model")
    if "messages" not in getattr(schema, "__annotations__", {}):
        raise UsageError(key, f"{path!r} has no messages field", "extend langchain.agents.AgentState")
    return schema


def build_middleware(specs: list[Any], key: str, own: set[str]) -> list[Any]:
    """Middleware from ``{_target_: ..., ...}`` specs, each checked to be an ``AgentMiddleware`` that
    works in async runs and whose name no earlier one in the stack (the runner's ``own`` first) has."""
    from hydra.utils import instantiate
    from langchain.agents.middleware import AgentMiddleware

    built: list[Any] = []
    names = set(own)
    for index, spec in enumerate(specs):
        item = f"{key}[{index}]"
        if not isinstance(spec, dict) or "_target_" not in spec:
            raise UsageError(item, "a middleware needs a _target_", MIDDLEWARE_EXAMPLE)
        target = spec["_target_"]
        locate(target, f"{item}._target_")
        try:
            middleware = instantiate(spec, _convert_="all")  # arguments as plain lists and dicts
        except Exception as exc:  # Hydra wraps the target's own error
            raise UsageError(item, f"{target}(...) failed: {_one_line(exc.__cause__ or exc)}", "fix its arguments") from None
        if not isinstance(middleware, AgentMiddleware):
            raise UsageError(item, f"{target}(...) made {type(middleware).__name__}, not an AgentMiddleware", MIDDLEWARE_EXAMPLE)
        for hook in ("wrap_model_call", "wrap_tool_call"):
            kind = type(middleware)
            if getattr(kind, hook) is not getattr(AgentMiddleware, hook) and \
                    getattr(kind, f"a{hook}") is getattr(AgentMiddleware, f"a{hook}"):
                raise UsageError(item, f"{target} has {hook} but no a{hook}",
                                  f"agents run asynchronously here: implement a{hook} too")
        if middleware.name in names:
            raise UsageError(item, f"the stack already has a middleware named {middleware.name!r}",
                              "each middleware of one agent needs its own name")
        names.add(middleware.name)
        built.append(middleware)
    return built


def _call_each(listeners: list[tuple[str, Callable[..., Any]]], hook: Hook, log: Any, event: Any) -> None:
    """Call each ``(source, function)`` with ``event``; one that raises is logged as a ``hook_error``
    naming its plugin or path, and the others are still called."""
    for source, listener in listeners:
        try:
            listener(event=event)
        except Exception as exc:  # a hook's bug must not change the run
            log.warning("hook_error", hook=hook, source=source, error=_one_line(exc), exc_info=exc)


class LoopExtensions:
    """What a run's config and plugins add to the loop: the hooks' listeners, both agents' middleware,
    and ``RubricMiddleware``'s grader arguments. ``*_own`` name the runner's own middleware of each agent."""

    def __init__(self, config: Config, plugins: Plugins, grader_own: set[str], worker_own: set[str]) -> None:
        grader = config.grader
        hooks: tuple[Hook, ...] = ("on_evaluation", "on_task_end", "on_run_end")
        self.listeners = {hook: plugins.hook_functions(hook) for hook in hooks}
        self.listeners["on_evaluation"] += [(path, _callable(path, f"grader.on_evaluation[{index}]", event=None))
                                            for index, path in enumerate(grader.on_evaluation)]
        self.grader_middleware = build_middleware(grader.middleware, "grader.middleware", grader_own)
        self.worker_middleware = build_middleware(config.worker.middleware, "worker.middleware", worker_own)
        self.grader_arguments: dict[str, Any] = {}
        if grader.prepare_messages_for_grader:
            self.grader_arguments["prepare_messages_for_grader"] = _callable(
                grader.prepare_messages_for_grader, "grader.prepare_messages_for_grader", "messages")
        if grader.build_grader_state:
            if not grader.state_schema:
                raise UsageError("grader.build_grader_state", "needs grader.state_schema",
                                 "name the state schema that declares the fields it sets")
            self.grader_arguments["build_grader_state"] = _callable(
                grader.build_grader_state, "grader.build_grader_state", "state", "iteration")
        if grader.context_schema is not None:
            raise UsageError("grader.context_schema", "removed: no runtime context reaches the grader, so a schema for it did nothing",
                             "remove grader.context_schema from the config")
        state_schema = _state_schema(grader.state_schema, "grader.state_schema")
        if state_schema is not None:
            self.grader_arguments["grader_state_schema"] = state_schema

    def graded(self, event: GradingPassed, log: Any) -> None:
        """Hand a grading pass to every ``on_evaluation`` listener."""
        _call_each(self.listeners["on_evaluation"], "on_evaluation", log, event)

    def task_ended(self, event: TaskEnded, log: Any) -> None:
        """Hand a task's end to every ``on_task_end`` listener."""
        _call_each(self.listeners["on_task_end"], "on_task_end", log, event)

    def run_ended(self, event: RunEnded, log: Any) -> None:
        """Hand a run's end to every ``on_run_end`` listener."""
        _call_each(self.listeners["on_run_end"], "on_run_end", log, event)


def notify_run_end(event: RunEnded, log: Any) -> None:
    """Hand a run's end to every plugin's ``on_run_end`` hook (a run that ended before its config was read)."""
    _call_each(Plugins.load().hook_functions("on_run_end"), "on_run_end", log, event)
