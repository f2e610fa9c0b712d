"""Composing the config with Hydra: the schema and resolvers registered, the compose API."""

from __future__ import annotations

import os
import secrets
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from omegaconf import DictConfig, OmegaConf, open_dict

from ..environment import job_env
from ..errors import UsageError
from ..paths import DATA_DIR
from .schema import Config

if TYPE_CHECKING:
    from ..records import ConfigSources


def _package_data(relative: str) -> str:
    """Resolver ``${package_data:suites/find_duplicates.yaml}``: a file shipped with rubric_runner."""
    return str(DATA_DIR / relative)


def _unique_time() -> str:
    """Resolver ``${unique_time:}``: ``HH-MM-SS.mmm-xxxx``, the time to the millisecond and a random
    id, so dirs made at once differ and still sort by time."""
    return f"{datetime.now():%H-%M-%S.%f}"[:12] + f"-{secrets.token_hex(2)}"


def register_configs() -> None:
    """Register the schema and the resolvers ``package_data``, ``job_env``, ``submit_dir`` and
    ``unique_time`` (idempotent).

    ``${submit_dir:}`` is the working directory of the process that composed the config, cached, so a
    sweep dir built on it stays the submitting shell's on every machine that runs a job.
    ``${unique_time:}`` is cached per composed config, so a run dir keeps its name once chosen.
    """
    ConfigStore.instance().store(name="schema", node=Config)
    if not OmegaConf.has_resolver("package_data"):
        OmegaConf.register_new_resolver("package_data", _package_data)
    if not OmegaConf.has_resolver("job_env"):
        OmegaConf.register_new_resolver("job_env", job_env)
    if not OmegaConf.has_resolver("submit_dir"):
        OmegaConf.register_new_resolver("submit_dir", os.getcwd, use_cache=True)
    if not OmegaConf.has_resolver("unique_time"):
        OmegaConf.register_new_resolver("unique_time", _unique_time, use_cache=True)


def _choices(override: Any) -> list[str]:
    """The option names an override of a config group gives: one, a list, or a sweep's values (a glob's
    matches are names of the group already)."""
    value = override.value()
    if isinstance(value, Glob):
        return []
    values = list(override.sweep_string_iterator()) if override.is_sweep_override() else value
    return [v for v in (values if isinstance(values, list) else [values]) if isinstance(v, str)]


def check_group_choices(overrides: list[str]) -> None:
    """Each config group's choice is a name, never a path: ``rubric=../../x`` (a ``/``, ``..`` or an
    absolute path) would load YAML from outside every config dir and name the run dir after it. A
    ``UsageError`` naming the group, before any config loads; overrides that do not parse are Hydra's to
    report."""
    parser = OverridesParser.create()
    for line in overrides:
        try:
            override = parser.parse_override(line)
        except Exception:  # the parser raises several error types for bad syntax
            continue
        if "." in override.key_or_group or override.is_delete():
            continue  # a config key (rubric.text=a/b), not a group
        for choice in _choices(override):
            if "/" in choice or "\\" in choice or ".." in choice or os.path.isabs(choice):
                group = override.key_or_group
                raise UsageError(group, f"{choice!r} is a path; a choice of {group} is the name of a file in its dir",
                                 f"put the file in <your config dir>/{group}/ and give --config-dir and {group}=NAME")


def compose(sources: ConfigSources, with_hydra: bool = False) -> DictConfig:
    """The config ``sources`` compose to, the package's config dir searched after theirs (with its ``hydra``
    node when asked); a ``UsageError`` naming the key and the fix when they do not compose."""
    from ..compat import hydra as compat_hydra
    from .hydra_errors import usage_error

    register_configs()
    check_group_choices(sources.overrides)
    try:
        cfg = compat_hydra.load(sources.config_dirs, sources.overrides)
        if not with_hydra:
            with open_dict(cfg):
                del cfg["hydra"]
        return cfg
    except Exception as exc:  # Hydra and OmegaConf raise many types; all mean the sources do not compose
        raise usage_error(exc, sources.overrides) from exc  # the cause, for HYDRA_FULL_ERROR=1's trace
