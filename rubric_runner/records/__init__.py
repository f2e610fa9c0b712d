"""Run records: the typed models, the status and exit-code owner, and reading and writing them.

Each name is imported from its module when first used, so that what needs only a status or a file
name (the CLI's ``--help`` and ``--cfg``) does not build the pydantic models.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "models": (
        "ATTEMPT_CHARS", "DID_NOT_RUN", "SCHEMA_VERSION", "USAGE_ERROR", "Aggregate", "AttemptVerification", "AttemptWorkspace", "BudgetInfo", "CheckOutcome", "CheckResult",
        "ConfigSources", "Coverage", "Criterion", "CutMessage", "ErrorInfo", "Evaluation", "FlaggedReply", "GraderInfo", "GraderView",
        "LimitHit", "ModelInfo", "Place", "Returned", "RubricInfo", "RunHeader", "RunKind", "RunRecord", "TaskRecord", "TaskRow", "TaskTally",
        "ToolOutputCut", "Unsupported", "Usage",
        "Verification", "Verifications", "now",
    ),
    "status": ("ExitCode", "Outcome", "Status", "gated_share", "satisfied_rate", "sweep_exit_code"),
    "layout": (
        "CHECKPOINT_FILE", "EVENTS_FILE", "HYDRA_DIR", "MESSAGE_TASK", "REGRADES_DIR", "RESULT_FILE", "TASKS_DIR", "TRANSCRIPT_FILE",
        "TURNS_DIR", "find_run_dirs", "is_task_dir", "listed_task_dirs", "move_task_files", "new_regrade_dir", "record_dirs", "run_and_turns", "task_dir", "task_key",
        "thread_home", "transcript_dirs", "turn_dir", "turn_dirs", "turn_number", "turn_root",
    ),
    "store": (
        "UNFINISHED", "BAD_RECORD", "Job", "collect", "crash_record", "load_record", "load_task", "read_record",
        "read_task", "read_task_at", "recorded_sources", "task_dirs", "task_records", "write_atomic", "write_json", "write_record",
    ),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

__all__ = list(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    globals()[name] = value
    return value
