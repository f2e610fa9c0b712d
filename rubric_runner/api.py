"""``rubric_runner.run``: a run from Python, composed from the same config as the command line."""

from __future__ import annotations

from pathlib import Path

import yaml
from omegaconf import OmegaConf, open_dict

from .config.compose import compose
from .config.hydra_errors import describe
from .errors import ConfigError
from .records import RunRecord
from .redaction import config_secrets, redact, redact_override


class ComposeError(ValueError):
    """Hydra could not compose the config from the overrides; the message names the key and the fix."""


def run(overrides: list[str] | None = None, run_dir: str | Path | None = None) -> RunRecord:
    """Run the rubric loop with ``overrides`` (as on the command line) and return its record.

    ``run_dir`` defaults to a new dir under ``outputs/runs/`` (``hydra.run.dir``). Raises
    ``ComposeError`` when Hydra cannot compose the overrides, and ``ConfigError`` when ``run_dir``
    already holds another run's record (unless ``run.resume=true``); any other problem, a config
    error found later included, ends in the returned record, as on the command line. Runs may go
    on at once in threads: each writes only its own files. Ctrl-C (KeyboardInterrupt) records the
    run as interrupted, then goes on up.
    """
    from .loop.launch import claim_run_dir, execute

    overrides = list(overrides or [])
    try:
        cfg = compose(overrides, return_hydra_config=True)
        chosen = Path(run_dir) if run_dir is not None else Path(str(cfg.hydra.run.dir))
    except Exception as exc:  # Hydra and OmegaConf raise many types; all mean the overrides do not compose
        raise ComposeError(describe(exc, overrides)) from None
    with open_dict(cfg):
        del cfg["hydra"]
    claim_run_dir(chosen, bool(OmegaConf.select(cfg, "run.resume")))
    save_config(chosen, cfg, overrides)
    return execute(cfg, chosen, overrides, claimed=True)


def save_config(run_dir: Path, cfg, overrides: list[str]) -> None:
    """The composed config and the overrides in ``.hydra/``, as the command line's runs keep them (for resume)."""
    saved = run_dir / ".hydra"
    saved.mkdir(exist_ok=True)
    secrets = config_secrets(OmegaConf.to_container(cfg, resolve=False), overrides)
    (saved / "config.yaml").write_text(redact(OmegaConf.to_yaml(cfg), secrets), encoding="utf-8")
    (saved / "overrides.yaml").write_text(yaml.safe_dump([redact_override(o) for o in overrides]), encoding="utf-8")


__all__ = ["ComposeError", "ConfigError", "run"]
