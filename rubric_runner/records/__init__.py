"""Run records: the typed models, the status and exit-code owner, and reading and writing them."""

from .models import (
    SCHEMA_VERSION,
    Aggregate,
    BudgetInfo,
    Criterion,
    ErrorInfo,
    Evaluation,
    GraderInfo,
    LimitHit,
    ModelInfo,
    RubricInfo,
    RunRecord,
    TaskRow,
    Usage,
    now,
)
from .status import ExitCode, Outcome, Status, satisfied_rate, sweep_exit_code
from .store import (
    CHECKPOINT_FILE,
    EVENTS_FILE,
    RESULT_FILE,
    TRANSCRIPT_FILE,
    Job,
    collect,
    crash_record,
    find_run_dirs,
    load_record,
    read_record,
    saved_overrides,
    write_json,
    write_record,
)

__all__ = [
    "SCHEMA_VERSION", "Aggregate", "BudgetInfo", "Criterion", "ErrorInfo", "Evaluation", "GraderInfo", "LimitHit", "ModelInfo",
    "RubricInfo", "RunRecord", "TaskRow", "Usage", "now", "ExitCode", "Outcome", "Status", "satisfied_rate", "sweep_exit_code",
    "CHECKPOINT_FILE", "EVENTS_FILE", "RESULT_FILE", "TRANSCRIPT_FILE", "Job", "collect", "crash_record",
    "find_run_dirs", "load_record", "read_record", "saved_overrides", "write_json", "write_record",
]
