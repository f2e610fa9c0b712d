"""What rubric_runner takes from Hydra beyond its public API, in one place.

The command line drives Hydra itself (so that every error before a job is one line) and composes
configs with extra config dirs (``--config-dir``) outside a Hydra app; Hydra offers both only in
``hydra._internal``. Each assumption made here is pinned by ``tests/compat/test_hydra.py``.
"""

from __future__ import annotations

import os
from typing import Any

from hydra import version
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_automatic_config_search_path, get_args_parser
from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import SearchPathException
from hydra.types import RunMode
from omegaconf import DictConfig

from ..paths import CONF_DIR

CONFIG_NAME = "config"
TASK_NAME = "cli"
"""``hydra.job.name``."""
COMMAND_LINE_SOURCES = ("command-line", "hydra.searchpath in command-line")
"""The providers of the config dirs a command line added (``--config-dir``, ``hydra.searchpath=[...]``)."""

__all__ = ["Callbacks", "get_args_parser"]


def search_path(config_dirs: list[str]) -> ConfigSearchPath:
    """The package's config dir, with ``config_dirs`` searched before it: a user's ``rubric/code.yaml`` wins
    over the bundled one. (Hydra's own ``--config-dir`` goes after its primary dir, which here is the
    package's: a user's file of a bundled name would be shadowed by it.)"""
    path = create_automatic_config_search_path(None, None, str(CONF_DIR))
    for config_dir in reversed(config_dirs):
        if "://" not in config_dir and not os.path.isdir(config_dir):
            raise SearchPathException(f"Additional config directory '{config_dir}' not found")
        location = config_dir if "://" in config_dir else f"file://{config_dir}"
        path.prepend(provider="command-line", path=location, anchor=SearchPathQuery(provider="main"))
    return path


def load(config_dirs: list[str], overrides: list[str], run_mode: RunMode = RunMode.RUN) -> DictConfig:
    """The config (with its ``hydra`` node) that ``overrides`` compose to, searching ``config_dirs`` first.

    Nothing process-wide is set, so composes may go on at once in threads."""
    version.setbase("1.3")
    loader = ConfigLoaderImpl(config_search_path=search_path(config_dirs))
    return loader.load_configuration(config_name=CONFIG_NAME, overrides=list(overrides), run_mode=run_mode)


def app(config_dirs: list[str]) -> Hydra:
    """Hydra's app, for its own commands (``--cfg``, ``--info``, sweeps); sets Hydra's global state."""
    return Hydra.create_main_hydra2(task_name=TASK_NAME, config_search_path=search_path(config_dirs))


def config_dirs_of(hydra_config: Any) -> list[str]:
    """The config dirs a command line added, from a job's ``hydra`` node (``hydra.runtime.config_sources``)."""
    return [source_dir(source["schema"], source["path"]) for source in hydra_config.runtime.config_sources
            if source["provider"] in COMMAND_LINE_SOURCES]


def source_dir(schema: str, path: str) -> str:
    """A config source as a config dir: a plain path for a ``file`` source, else ``schema://path``."""
    return path if schema == "file" else f"{schema}://{path}"


def combinations(overrides: list[str]) -> list[list[str]]:
    """Each combination of the overrides' values, as Hydra's basic sweeper makes them (``grader=a,b``)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    return [combination for batch in BasicSweeper.split_arguments(parsed, None) for combination in batch]


def _line(override: Override) -> str:
    """An override's text as given (the parser keeps each one's)."""
    assert override.input_line is not None
    return override.input_line


def first_sweep(overrides: list[str]) -> tuple[str, str] | None:
    """The key and the text of the first override with several values (``grader=a,b``), if any."""
    swept = next((o for o in OverridesParser.create().parse_overrides(overrides) if o.is_sweep_override()), None)
    return (swept.get_key_element(), _line(swept)) if swept is not None else None


def first_of_each_value(overrides: list[str]) -> list[list[str]]:
    """Enough jobs' overrides to meet every value of every swept key once (each other key at its first value)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    fixed = [_line(o) for o in parsed if not o.is_sweep_override()]
    swept = [(o.get_key_element(), list(o.sweep_string_iterator())) for o in parsed if o.is_sweep_override()]
    firsts = [f"{key}={values[0]}" for key, values in swept if values]
    jobs = [[*fixed, *firsts]]
    for index, (key, values) in enumerate(swept):
        for value in values[1:]:
            jobs.append([*fixed, *firsts[:index], f"{key}={value}", *firsts[index + 1:]])
    return jobs


def job_exception(job_return: Any) -> BaseException:
    """What a failed job's function raised (``JobReturn.return_value`` re-raises it; the field holds it)."""
    return job_return._return_value
