"""The error a user can fix: names the config key (or argument) and the fix."""

from __future__ import annotations


class ConfigError(ValueError):
    """A user-fixable problem with the config: names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem} ({fix})")
        self.key, self.problem, self.fix = key, problem, fix
