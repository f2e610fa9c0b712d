"""Composing the config with Hydra: the schema and resolvers registered, the compose API."""

from __future__ import annotations

import os
import secrets
import threading
from datetime import datetime

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from ..paths import CONF_DIR, DATA_DIR
from .environment import job_env
from .schema import Config


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


_COMPOSING = threading.Lock()
"""Hydra's compose API keeps its state in a process-wide singleton: one compose at a time."""


def compose(overrides: list[str], return_hydra_config: bool = False) -> DictConfig:
    """The config ``rubric-runner OVERRIDES`` runs with, composed with Hydra's compose API."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    register_configs()
    with _COMPOSING, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=return_hydra_config)
