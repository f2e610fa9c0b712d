"""Composing the config with Hydra: the schema and resolvers registered, the compose API."""

from __future__ import annotations

import os
import secrets
from datetime import datetime
from typing import TYPE_CHECKING

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf, open_dict

from ..paths import DATA_DIR
from ..environment import job_env
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


def compose(sources: ConfigSources, with_hydra: bool = False) -> DictConfig:
    """The config ``sources`` compose to, the package's config dir searched after theirs (with its ``hydra``
    node when asked); a ``UsageError`` naming the key and the fix when they do not compose."""
    from ..compat import hydra as compat_hydra
    from .hydra_errors import usage_error

    register_configs()
    try:
        cfg = compat_hydra.load(sources.config_dirs, sources.overrides)
        if not with_hydra:
            with open_dict(cfg):
                del cfg["hydra"]
        return cfg
    except Exception as exc:  # Hydra and OmegaConf raise many types; all mean the sources do not compose
        raise usage_error(exc, sources.overrides) from exc  # the cause, for HYDRA_FULL_ERROR=1's trace
