"""The one error a user can fix, in the config or on the command line: it names the key and the fix."""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from pathlib import Path

PLACE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})
"""Errors of a place the user can fix: no permission, a read-only or full file system."""
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""No room to write: a full file system, a quota, a file at its size limit (``ulimit -f``)."""
SQLITE_NO_ROOM = frozenset({13, 778})
"""SQLite's "database or disk is full" (SQLITE_FULL), and the "disk I/O error" of a write (SQLITE_IOERR_WRITE),
which is what a file at its size limit gives it."""


class UsageError(ValueError):
    """A problem the user can fix: ``key`` is the config key (``grader.model``) or the argument
    (``RUN_DIR``, ``--task``) at fault, ``fix`` what to do. Shown as one line; exit code 2."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem} ({fix})" if key else f"{problem} ({fix})")
        self.key, self.problem, self.fix = key, problem, fix


def unwritable(exc: OSError, key: str, fix: str) -> UsageError:
    """A place that could not be written (or read), as a usage error naming the path and the fix."""
    return UsageError(key, f"cannot write {exc.filename or 'there'}: {exc.strerror or exc}", fix)


def place_error(exc: OSError, key: str) -> UsageError | None:
    """``exc`` as a usage error when it is about a place the user can fix (a path it could not read or
    write), else None."""
    if exc.errno not in PLACE_ERRNOS or not exc.filename:
        return None
    return UsageError(key, f"cannot use {exc.filename}: {exc.strerror}",
                      "give a dir you may read and write, or work on a copy of it in one")


def check_database(path: Path, key: str, fix: str) -> None:
    """A SQLite file the run reads again (its checkpoints, the response cache), when there: one that does not
    read whole (``PRAGMA quick_check``) is a usage error naming it and ``fix``, not a bare "malformed"."""
    if not path.is_file():
        return
    try:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            found = connection.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:  # not a database at all, or a header too damaged to open
        found = str(exc)
    if found != "ok":  # quick_check lists each fault by page and byte: said in the words SQLite uses for it
        problem = found if "\n" not in found and "***" not in found else "database disk image is malformed"
        raise UsageError(key, f"{path} is damaged: {problem}", fix)


class NoSpace(Exception):
    """A file of a run could not be written for want of room: the run stops there, as nothing it did next could
    be recorded. Its record says so (when it can still be written), and a resume goes on from the last checkpoint."""

    def __init__(self, path: str, reason: str, run_dir: str) -> None:
        super().__init__(f"cannot write {path}: {reason} (free space on its file system, or raise the file size limit "
                         f"(ulimit -f); then `rubric-runner resume {run_dir}` goes on from the last checkpoint)")


def out_of_space(exc: BaseException | None, database: str = "") -> tuple[str, str] | None:
    """The file and the reason when ``exc``, or an exception it came from, is a write that found no room;
    ``database`` is the file a SQLite error that names none stands for. None for any other error."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return str(exc.filename or database), exc.strerror or str(exc)
        if isinstance(exc, sqlite3.OperationalError) and getattr(exc, "sqlite_errorcode", None) in SQLITE_NO_ROOM:
            return database, str(exc)
        exc = exc.__cause__ or exc.__context__
    return None
