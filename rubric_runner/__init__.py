"""rubric_runner: a declarative, Hydra-configured runner for deepagents' RubricMiddleware."""

__version__ = "0.1.0"
