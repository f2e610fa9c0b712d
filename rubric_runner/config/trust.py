"""A run dir is data, not code: the code a run dir's recorded config names (``_target_``s, dotted callables,
tools by import path, ``pkg://`` config dirs) runs on a resume, a regrade or a follow-up turn only when the
user's own config names it too (the bundled conf/, the config dirs and the overrides given now), or when
the user trusts the run dir (``--trust-run-dir``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from omegaconf import DictConfig, OmegaConf

from ..errors import UsageError
from ..paths import CONF_DIR

CALLABLE_KEYS = ("grader.on_evaluation", "grader.prepare_messages_for_grader", "grader.build_grader_state",
                 "grader.state_schema", "grader.context_schema")
"""The keys whose values are dotted paths of code to import."""
TOOL_KEYS = ("worker.tools", "grader.tools", "rubric.verify")
"""The keys whose names are tools: a dotted name is an import path."""
TRUST_FLAG = "--trust-run-dir"
SHOWN = 3
"""The most pieces of code a refusal names."""


def _strings(node: Any) -> Iterator[str]:
    """Every string in ``node`` (plain dicts and lists), keys included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, str):
        yield node


def trusted_names(config_dirs: list[str], overrides: list[str]) -> set[str]:
    """Every string the user's own config holds: the YAML files of the bundled conf/ and of ``config_dirs``,
    and ``overrides`` (their values, and each dotted tail of their keys: ``+grader.tools.mod.tool={}``)."""
    names = set(config_dirs)
    for folder in (str(CONF_DIR), *config_dirs):
        for path in Path(folder).rglob("*.yaml") if "://" not in folder else ():
            try:
                names.update(_strings(yaml.safe_load(path.read_text(encoding="utf-8"))))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
    parser = OverridesParser.create()
    for line in overrides:
        try:
            override = parser.parse_override(line)
        except Exception:  # the parser raises several error types for bad syntax: Hydra reports it later
            continue
        parts = override.key_or_group.split(".")
        names.update(".".join(parts[index:]) for index in range(len(parts)))
        if not isinstance(override.value(), Glob):  # a glob's matches are group options, not code
            names.update(_strings(list(override.sweep_string_iterator()) if override.is_sweep_override() else override.value()))
    return names


def named_code(cfg: DictConfig) -> list[tuple[str, str]]:
    """``(key, dotted name)`` of each piece of code ``cfg`` would import: each ``_target_`` at any depth, the
    dotted callables and schemas of ``CALLABLE_KEYS``, and each tool named by import path."""
    data = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=False))
    found: list[tuple[str, str]] = []

    def targets(node: Any, key: str) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for name, value in items:
            full = f"{key}[{name}]" if isinstance(node, list) else f"{key}.{name}" if key else str(name)
            if name == "_target_":
                found.append((full, str(value)))
            else:
                targets(value, full)

    targets({key: value for key, value in data.items() if key != "hydra"}, "")
    for key in CALLABLE_KEYS:
        value = OmegaConf.select(cfg, key, throw_on_missing=False)
        if isinstance(value, str):
            found.append((key, value))
        for index, item in enumerate(value if not isinstance(value, (str, type(None))) else []):
            found.append((f"{key}[{index}]", str(item)))
    for key in TOOL_KEYS:
        tools = OmegaConf.select(cfg, key, throw_on_missing=False)
        found += [(f"{key}.{name}", str(name)) for name in tools or {} if "." in str(name) and "/" not in str(name)]
    return found


def _refuse(run_dir: Path, untrusted: list[tuple[str, str]]) -> None:
    if untrusted:
        named = ", ".join(f"{key}={name}" for key, name in untrusted[:SHOWN])
        more = f" and {len(untrusted) - SHOWN} more" if len(untrusted) > SHOWN else ""
        raise UsageError("RUN_DIR", f"{run_dir} would run code its record names and your own config does not: "
                         f"{named}{more}", f"check the run dir, then add {TRUST_FLAG} to run it; or give it "
                         "yourself, as an override or in a --config-dir")


def check_config_dirs(run_dir: Path, config_dirs: list[str], trusted: set[str]) -> None:
    """A recorded config dir that is a package (``pkg://``: imported to be read) must be the user's own."""
    _refuse(run_dir, [("config dir", d) for d in config_dirs if "://" in d and d not in trusted])


def check_code(run_dir: Path, cfg: DictConfig, trusted: set[str]) -> None:
    """Each piece of code ``cfg`` (composed from ``run_dir``'s record) names must be in ``trusted``."""
    _refuse(run_dir, [(key, name) for key, name in named_code(cfg) if name not in trusted])
