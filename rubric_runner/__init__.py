"""rubric_runner: a declarative, Hydra-configured runner for deepagents' RubricMiddleware."""

from .hookspecs import hookimpl

__all__ = ["hookimpl"]
__version__ = "0.1.0"
