"""rubric_runner: a declarative, Hydra-configured runner for deepagents' RubricMiddleware.

``rubric_runner.run(overrides=[...], run_dir=...)`` runs from Python and returns the typed record
(``rubric_runner.records.RunRecord``); ``resume``, ``continue_run``, ``regrade``, ``compare`` and ``policies``
do what the commands of those names do (see ``rubric_runner.api``). ``hookimpl`` marks a plugin's hooks.
"""

from typing import Any

from .plugins.hookspecs import hookimpl

__all__ = ["compare", "continue_run", "hookimpl", "policies", "regrade", "resume", "run"]
__version__ = "0.1.0"

_API = ("compare", "continue_run", "policies", "regrade", "resume", "run")


def __getattr__(name: str) -> Any:
    """The API's functions are imported when first used, so ``import rubric_runner`` stays light."""
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'rubric_runner' has no attribute {name!r}")
