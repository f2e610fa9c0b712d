"""The JSON Schema of ``result.json``, generated from ``RunRecord``; committed as schemas/result.schema.json.

    python -m rubric_runner.records.schema > schemas/result.schema.json
"""

from __future__ import annotations

import json

from .models import RunRecord


def json_schema() -> str:
    """The schema of what a run writes, as the committed file holds it."""
    return json.dumps(RunRecord.model_json_schema(mode="serialization"), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(json_schema(), end="")
