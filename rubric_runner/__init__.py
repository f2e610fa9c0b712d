"""rubric_runner: a declarative, Hydra-configured runner for deepagents' RubricMiddleware.

``rubric_runner.run(overrides=[...], run_dir=...)`` runs from Python and returns the typed record
(``rubric_runner.records.RunRecord``; see ``rubric_runner.api``); ``hookimpl`` marks a plugin's hooks.
"""

from typing import Any

from .plugins.hookspecs import hookimpl

__all__ = ["hookimpl", "run"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``run`` is imported when first used, so ``import rubric_runner`` stays light."""
    if name == "run":
        from .api import run

        return run
    raise AttributeError(f"module 'rubric_runner' has no attribute {name!r}")
