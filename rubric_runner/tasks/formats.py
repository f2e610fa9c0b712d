"""The rows of a task set, in the formats people keep them: JSONL, YAML, CSV, Parquet and Arrow files, a
Hugging Face dataset saved with ``save_to_disk``, or one in the local Hugging Face hub cache.

Each row comes with where it is (``Row.where``: ``tasks.csv line 4``), so a bad row is named in one
line. ``DIR:SPLIT`` and ``hf:OWNER/NAME:SPLIT`` pick a split; Parquet, Arrow and Hugging Face datasets
need the ``datasets`` extra. Nothing here goes to the network: a hub dataset is read from the local
cache only (``HF_HOME`` / ``HF_HUB_CACHE``, as Hugging Face tools place it).
"""

from __future__ import annotations

import csv
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError

HUB_PREFIX = "hf:"
HF_SUFFIXES = (".parquet", ".arrow")
"""Files read through the ``datasets`` extra."""
KEY = "rubric.dataset"


@dataclass(frozen=True)
class Row:
    """One raw row of a task set and where it is."""

    item: Any
    where: str


def _invalid(path: Path | str, problem: str) -> UsageError:
    return UsageError(KEY, f"{path} is not valid: {problem}", "fix the file")


def _jsonl(path: Path) -> list[Row]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(Row(json.loads(line), f"{path.name} line {number}"))
            except json.JSONDecodeError as exc:
                raise _invalid(path, f"line {number}: {exc.msg} at column {exc.colno}") from None
    return rows


def _yaml(path: Path) -> list[Row]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise _invalid(path, str(exc).splitlines()[0]) from None
    data = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(data, list):
        raise UsageError(KEY, f"{path} holds no list of tasks", "one task per line (JSONL) or a YAML list")
    return [Row(item, f"{path.name} item {number}") for number, item in enumerate(data)]


def _csv(path: Path) -> list[Row]:
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        rows = []
        try:
            for row in reader:
                if None in row:
                    raise _invalid(path, f"line {reader.line_num} has more cells than the header")
                rows.append(Row(row, f"{path.name} line {reader.line_num}"))
        except csv.Error as exc:
            raise _invalid(path, f"line {reader.line_num}: {exc}") from None
    return rows


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise UsageError(KEY, "reading Parquet, Arrow and Hugging Face datasets needs the datasets extra",
                         "pip install 'rubric_runner[datasets]'") from None
    return datasets


def _split(data: Any, split: str | None, name: str) -> Any:
    """One split of a ``DatasetDict`` (the one there is, when ``split`` is not given), or the ``Dataset``."""
    if not hasattr(data, "keys"):
        if split:
            raise UsageError(KEY, f"{name} is a single dataset with no splits", f"give it without :{split}")
        return data
    splits = list(data.keys())
    if split is None and len(splits) == 1:
        split = splits[0]
    if split not in splits:
        raise UsageError(KEY, f"{name} has splits {', '.join(splits)}" + (f", not {split!r}" if split else ""),
                         f"name one: {name}:{splits[0]}")
    return data[split]


def _rows_of(data: Any, name: str) -> list[Row]:
    return [Row(item, f"{name} row {number}") for number, item in enumerate(data.to_list())]


def _saved(path: Path, split: str | None) -> list[Row]:
    datasets = _datasets()
    try:
        data = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(KEY, f"{path} is not a dataset saved with save_to_disk: {str(exc).splitlines()[0]}",
                         "give a JSONL, YAML, CSV, Parquet or Arrow file, or a save_to_disk dir") from None
    return _rows_of(_split(data, split, str(path)), path.name)


def _hub(spec: str) -> list[Row]:
    """``hf:OWNER/NAME[:SPLIT]`` from the local hub cache, never the network."""
    name, _, split = spec.removeprefix(HUB_PREFIX).partition(":")
    datasets = _datasets()
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(name, repo_type="dataset", local_files_only=True)
    except (LocalEntryNotFoundError, ValueError) as exc:
        raise UsageError(KEY, f"{name} is not in the local Hugging Face hub cache ({str(exc).splitlines()[0]})",
                         f"download it first, e.g. `hf download --repo-type dataset {name}`") from None
    with tempfile.TemporaryDirectory() as cache:  # held in memory: nothing is left in the cache dir
        data = datasets.load_dataset(folder, cache_dir=cache, keep_in_memory=True)
        return _rows_of(_split(data, split or None, spec), name)


def _file_through_datasets(path: Path) -> list[Row]:
    datasets = _datasets()
    if path.suffix == ".arrow":
        data = datasets.Dataset.from_file(str(path))
    else:
        import pyarrow.parquet

        data = datasets.Dataset(pyarrow.parquet.read_table(path))
    return _rows_of(data, path.name)


def read_rows(dataset: str) -> list[Row]:
    """The raw rows of ``rubric.dataset`` (a file, a saved dataset's dir, ``hf:OWNER/NAME``), each with where it is."""
    if dataset.startswith(HUB_PREFIX):
        return _hub(dataset)
    path, split = Path(dataset), None
    if not path.exists() and ":" in dataset:
        head, _, tail = dataset.rpartition(":")
        if Path(head).is_dir():
            path, split = Path(head), tail
    try:
        if path.is_dir():
            return _saved(path, split)
        if path.suffix == ".csv":
            return _csv(path)
        if path.suffix in HF_SUFFIXES:
            return _file_through_datasets(path)
        return _jsonl(path) if path.suffix == ".jsonl" else _yaml(path)
    except FileNotFoundError:
        raise UsageError(KEY, f"no such file: {path}", "give a JSONL, YAML, CSV, Parquet or Arrow task file, a save_to_disk "
                         "dir, hf:OWNER/NAME from the hub cache, or a built-in set: humaneval") from None
    except UnicodeDecodeError as exc:
        raise _invalid(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
