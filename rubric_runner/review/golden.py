"""Golden transcripts: a labelled run kept as a grader's regression test.

A golden dir is a copy of a run dir that holds what a regrade reads and nothing else: ``.hydra/`` (the
config it composes again), ``result.json`` and each task's ``tasks/<id>-r<k>/result.json`` and
``transcript.json`` (a version 1 or 2 run of one task: its own, in the dir), ``labels.json`` (people's labels, the
truth; the format of ``review.labels``), and ``golden.json``::

    {"format": 1, "source": "/abs/run/dir", "made_at": "...", "labels": 5, "from_checks": 2,
     "min_agreement": 0.8}

``from_checks`` counts the labels taken from the final answers' hidden checks where no person labelled
(``--from-checks``); ``min_agreement`` is the share of the verdicts a grader must agree on with the
labels, below which ``rubric-runner regrade GOLDEN_DIR`` exits 4 (``--min-agreement`` overrides it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..errors import UsageError
from ..records import (
    RESULT_FILE,
    TRANSCRIPT_FILE,
    now,
    read_task_at,
    record_dirs,
    task_dir,
)
from .labels import LABELS_FILE, PersonLabel, read_labels, write_labels

GOLDEN_FILE = "golden.json"
FORMAT = 1
DEFAULT_MIN_AGREEMENT = 0.8


def make_golden(run_dir: Path, out_dir: Path, from_checks: bool = False,
                min_agreement: float = DEFAULT_MIN_AGREEMENT) -> dict:
    """Copy the labelled records of the run in ``run_dir`` into a new golden dir ``out_dir``; returns its
    ``golden.json``. Only labelled records are kept (with ``from_checks``, those with hidden checks too)."""
    run_dir, out_dir = Path(run_dir).resolve(), Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise UsageError("OUT_DIR", f"{out_dir} is not empty", "give a new dir for the golden transcripts")
    labels = read_labels(run_dir)
    kept, checked = {}, 0
    for record_dir in record_dirs(run_dir):
        key = record_dir.relative_to(run_dir).as_posix()
        if not (record_dir / TRANSCRIPT_FILE).is_file():
            continue
        if key in labels and labels[key].satisfied is not None:
            kept[key] = labels[key]
        elif from_checks:
            task = read_task_at(record_dir)
            passed = task.verified("final") if task else None
            if passed is not None:
                kept[key] = PersonLabel(passed, note="from the hidden checks", labelled_at=now())
                checked += 1
    if not kept:
        raise UsageError("RUN_DIR", f"{run_dir} has no labelled transcript",
                         "label some with `rubric-runner review RUN_DIR`, or add --from-checks")
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_dir / ".hydra", out_dir / ".hydra")
    shutil.copy2(run_dir / RESULT_FILE, out_dir / RESULT_FILE)
    for key in kept:
        target = out_dir / key
        target.mkdir(parents=True, exist_ok=True)
        for name in (RESULT_FILE, TRANSCRIPT_FILE):
            shutil.copy2(run_dir / key / name, target / name)
    _keep_only(out_dir, set(kept))
    write_labels(out_dir, kept)
    golden = {"format": FORMAT, "source": str(run_dir), "made_at": now(), "labels": len(kept), "from_checks": checked,
              "min_agreement": min_agreement}
    (out_dir / GOLDEN_FILE).write_text(json.dumps(golden, indent=2) + "\n", encoding="utf-8")
    return golden


def _keep_only(out_dir: Path, keys: set[str]) -> None:
    """The copied run record lists only the tasks kept, so a regrade and a report see just those."""
    path = out_dir / RESULT_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("tasks"):
        kept = {out_dir / key for key in keys}
        data["tasks"] = [row for row in data["tasks"] if task_dir(out_dir, row.get("task_id"), row.get("repeat")) in kept]
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def golden_threshold(root: Path) -> float | None:
    """The ``min_agreement`` of the golden dir ``root``; None when it is no golden dir."""
    path = Path(root) / GOLDEN_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("min_agreement", DEFAULT_MIN_AGREEMENT)
    except ValueError as exc:
        raise UsageError(str(path), f"is not JSON: {exc}", "make the golden dir again") from None
    return float(value)


__all__ = ["DEFAULT_MIN_AGREEMENT", "GOLDEN_FILE", "LABELS_FILE", "golden_threshold", "make_golden"]
