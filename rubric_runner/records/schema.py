"""The JSON Schemas of the records, generated from the models; committed in ``schemas/``.

A run dir's ``result.json`` is a ``RunRecord`` (``run.schema.json``); a task's in ``tasks/<id>-r<k>/`` is a
``TaskRecord`` (``task.schema.json``). Regenerate them with ``python -m rubric_runner.records.schema schemas``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from .models import RunRecord, TaskRecord

SCHEMAS: dict[str, type[BaseModel]] = {"run.schema.json": RunRecord, "task.schema.json": TaskRecord}
"""Each schema file and the model it describes."""


def json_schema(name: str) -> str:
    """The schema file ``name``, as it is committed."""
    return json.dumps(SCHEMAS[name].model_json_schema(mode="serialization"), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    for name in SCHEMAS:
        (Path(sys.argv[1]) / name).write_text(json_schema(name), encoding="utf-8")
