"""Run records: the typed models, the status and exit-code owner, and reading and writing them."""

from .models import (
    SCHEMA_VERSION,
    Aggregate,
    BudgetInfo,
    CheckOutcome,
    CheckResult,
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
    Verification,
    Verifications,
    now,
)
from .status import ExitCode, Outcome, Status, satisfied_rate, sweep_exit_code
from .store import (
    CHECKPOINT_FILE,
    EVENTS_FILE,
    RESULT_FILE,
    TRANSCRIPT_FILE,
    TURNS_DIR,
    Job,
    collect,
    crash_record,
    find_run_dirs,
    load_record,
    read_record,
    record_dirs,
    saved_overrides,
    turn_dirs,
    write_json,
    write_record,
)

__all__ = [
    "SCHEMA_VERSION", "Aggregate", "BudgetInfo", "CheckOutcome", "CheckResult", "Criterion", "ErrorInfo", "Evaluation", "GraderInfo",
    "LimitHit", "ModelInfo", "RubricInfo", "RunRecord", "TaskRow", "Usage", "Verification", "Verifications", "now", "ExitCode", "Outcome",
    "Status", "satisfied_rate", "sweep_exit_code",
    "CHECKPOINT_FILE", "EVENTS_FILE", "RESULT_FILE", "TRANSCRIPT_FILE", "TURNS_DIR", "Job", "collect", "crash_record",
    "find_run_dirs", "load_record", "read_record", "record_dirs", "saved_overrides", "turn_dirs", "write_json",
    "write_record",
]
