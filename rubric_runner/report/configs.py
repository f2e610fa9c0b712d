"""Which configuration a run ran, and how the reports name it.

Runs are grouped by configuration: what ``config.fingerprint.behaviour`` keeps of their resolved
config (what changes what a task does: not plumbing, not which tasks were picked), their kind (a
regrade is one grading pass) and their turn. Shards of one task set, run as several jobs, are one
group; a sweep over ``grader.max_iterations=1,3`` is two. A group is named by the overrides in which it
differs from the others (``grader.max_iterations=3``; a group choice as chosen, ``rubric=code``), where those
are alike by the keys in which its config differs; a grader, by its ``grader.*`` keys.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

from ..config.fingerprint import behaviour, behaviour_overrides, fingerprint
from ..records import RunHeader, RunKind

VALUE_CHARS = 40
"""The most characters of a value a label shows."""


def configuration(header: RunHeader) -> dict[str, Any]:
    """A run's configuration, flattened; from what its header says when it holds no resolved config."""
    if header.config:
        return behaviour(header.config, header.sources.overrides)
    known = {
        "worker.model": header.worker.model, "grader.model": header.grader.model, "rubric.name": header.rubric.name,
        "grader.max_iterations": header.grader.max_iterations,
    }
    if header.regraded_from:
        known["regraded_with"] = " ".join(header.regraded_with or [])
    return {key: value for key, value in known.items() if value is not None}


def _digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def group_key(header: RunHeader) -> str:
    """What runs of one group share: kind, turn and configuration (``config.fingerprint``)."""
    digest = fingerprint(header.config, header.sources.overrides) if header.config else _digest(configuration(header))
    return f"{header.kind.value}:{header.turn or 1}:{digest}"


def arm(header: RunHeader) -> str:
    """The run's ``loop.arm``: rubric (also for a record that predates the key), resample or single."""
    return str((header.config.get("loop") or {}).get("arm") or "rubric")


def policy(header: RunHeader) -> tuple[str, str]:
    """The run's ``loop.returns`` and ``loop.stop`` (last and none for a record that predates them)."""
    loop = header.config.get("loop") or {}
    return str(loop.get("returns") or "last"), str(loop.get("stop") or "none")


POLICY_KEYS = ("loop.returns", "loop.stop")
"""The loop's policy: configurations alike but in these keys ran one loop under two policies."""


def pairing_key(header: RunHeader, leaving_out: tuple[str, ...] = ("loop.",)) -> str:
    """What runs to compare share: kind, turn and configuration but the keys that start with one of
    ``leaving_out`` (by default the ``loop.*`` keys: runs of arms to compare; ``POLICY_KEYS``: of policies)."""
    part = {key: value for key, value in configuration(header).items() if not key.startswith(leaving_out)}
    return f"{header.kind.value}:{header.turn or 1}:{_digest(part)}"


def grader_part(header: RunHeader) -> dict[str, Any]:
    """The grader's part of a run's configuration: its ``grader.*`` keys but the loop's budget of passes,
    ``grader.max_iterations`` (a regrade's overrides when the header holds no config)."""
    return {key: value for key, value in configuration(header).items()
            if key.startswith(("grader.", "regraded_with")) and key != "grader.max_iterations"}


def grader_key(header: RunHeader) -> str:
    """Who judged a run: a digest of ``grader_part``."""
    return _digest(grader_part(header))


def _shown(values: list[Any]) -> list[str]:
    """The values of one key as labels show them: a leading path common to its path values left out, long
    ones cut (a path to its tail, where paths differ); uncut where cutting would make two read alike."""
    texts = [" ".join(str(v).split()) if not isinstance(v, (dict, list)) else json.dumps(v, default=str) for v in values]
    paths = [t for t in texts if t.startswith("/")]
    prefix = os.path.dirname(os.path.commonprefix(paths)) if len(set(paths)) > 1 else ""
    if len(prefix) > 1:
        texts = ["\u2026" + t[len(prefix):] if t.startswith(prefix + "/") else t for t in texts]
    cut = [_cut(t) for t in texts]
    return [c if cut.count(c) == texts.count(t) else t for c, t in zip(cut, texts)]


def _cut(text: str) -> str:
    if len(text) <= VALUE_CHARS:
        return text
    if text.startswith(("/", "\u2026/")):
        return "\u2026" + text[1 - VALUE_CHARS:]
    return text[: VALUE_CHARS - 1] + "\u2026"


def labels(parts: dict[str, dict[str, Any]], fallback: dict[str, str]) -> dict[str, str]:
    """Each key's label: the keys (and values) in which its part differs from the others' parts, or its
    ``fallback`` when there is one part, or none differs."""
    keys = sorted({k for part in parts.values() for k in part if len({_hashable(p.get(k)) for p in parts.values()}) > 1})
    shown = {k: dict(zip(parts, _shown([part.get(k) for part in parts.values()]))) for k in keys}
    return {
        name: ", ".join(f"{k}={shown[k][name]}" for k in keys if k in part) or fallback[name]
        for name, part in parts.items()
    }


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True, default=str)


def _given(headers: dict[str, RunHeader]) -> dict[str, dict[str, Any]]:
    """Each header's part of the overrides whose text differs among the headers': a config key by its resolved
    value, given or not; a group choice (``rubric=code``) where given."""
    given = {key: behaviour_overrides(h.sources.overrides) for key, h in headers.items()}
    differ = {k for part in given.values() for k in part if len({p.get(k) for p in given.values()}) > 1}
    shown = {}
    for key, part in given.items():
        config = configuration(headers[key])
        shown[key] = {k: config.get(k.lstrip("+"), part.get(k)) for k in sorted(differ) if k in part or k.lstrip("+") in config}
    return shown


def _by_overrides(first: dict[str, RunHeader], given: dict[str, dict[str, Any]], resolved: dict[str, dict[str, Any]],
                  fallback: dict[str, str]) -> dict[str, str]:
    """Each key's label: the ``given`` overrides in which it differs, then, where those are alike, the
    ``resolved`` keys in which the keys alike differ; its ``fallback`` where neither tells it apart."""
    named = labels(given, dict.fromkeys(first, ""))
    told: dict[str, str] = {}
    for text in set(named.values()):
        alike = [key for key in first if named[key] == text]
        told.update(labels({key: resolved[key] for key in alike}, dict.fromkeys(alike, "")))
    return {key: ", ".join(part for part in (named[key], told[key]) if part) or fallback[key] for key in first}


def group_labels(headers: Iterable[tuple[str, RunHeader]]) -> dict[str, str]:
    """The label of each group key, from a header of each: the overrides in which it differs (``rubric=code``,
    not the keys that choice set), then, where those are alike, the resolved keys in which the groups alike
    differ; led by its kind or turn when the groups' differ."""
    first = dict(headers)
    fallback = {key: f"{h.worker.model or '?'} / {h.grader.model or '?'} / {h.rubric.name or '?'}" for key, h in first.items()}
    named = _by_overrides(first, _given(first), {key: configuration(h) for key, h in first.items()}, fallback)
    kinds = {(h.kind, h.turn or 1) for h in first.values()}
    if len(kinds) > 1:
        for key, h in first.items():
            lead = "regrade" if h.kind is RunKind.REGRADE else f"turn {h.turn}" if h.turn else "run"
            named[key] = f"{lead}: {named[key]}"
    return named


def _grader_override(key: str) -> bool:
    """Whether an override sets the grader (``grader=haiku``, ``grader.model=...``) but its budget of passes."""
    key = key.lstrip("+~")
    return (key == "grader" or key.startswith("grader.")) and key != "grader.max_iterations"


def grader_labels(headers: Iterable[tuple[str, RunHeader]]) -> dict[str, str]:
    """The label of each grader key, from a header of each: the grader overrides in which it differs
    (``grader=haiku``), then the ``grader.*`` keys in which the graders alike differ; or its model."""
    first = dict(headers)
    given = {key: {k: v for k, v in part.items() if _grader_override(k)} for key, part in _given(first).items()}
    return _by_overrides(first, given, {key: grader_part(h) for key, h in first.items()},
                         {key: h.grader.model or "?" for key, h in first.items()})
