"""The one error a user can fix, in the config or on the command line: it names the key and the fix."""

from __future__ import annotations


class UsageError(ValueError):
    """A problem the user can fix: ``key`` is the config key (``grader.model``) or the argument
    (``RUN_DIR``, ``--task``) at fault, ``fix`` what to do. Shown as one line; exit code 2."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem} ({fix})" if key else f"{problem} ({fix})")
        self.key, self.problem, self.fix = key, problem, fix


def unwritable(exc: OSError, key: str, fix: str) -> UsageError:
    """A place that could not be written (or read), as a usage error naming the path and the fix."""
    return UsageError(key, f"cannot write {exc.filename or 'there'}: {exc.strerror or exc}", fix)
