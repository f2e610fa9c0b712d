"""One line, naming the key and the fix, for each way Hydra rejects a command line before a run."""

from __future__ import annotations

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import (
    ConfigCompositionException,
    MissingConfigException,
    OverrideParseException,
    SearchPathException,
)
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from ..errors import UsageError
from ..redaction import is_secret_key

GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _parses(override: str) -> bool:
    try:
        OverridesParser.create().parse_override(override)
    except Exception:  # the parser raises several error types for bad syntax
        return False
    return True


def usage_error(exc: Exception, args: list[str]) -> UsageError:
    """The one line (``key: problem (fix)``) for an error Hydra raised while composing a config or making a
    run dir, as a ``UsageError``; ``args`` are the command-line arguments, to name the override that did
    not parse. A ``UsageError`` is itself."""
    if isinstance(exc, UsageError):
        return exc
    return UsageError(*_described(exc, args))


def _described(exc: Exception, args: list[str]) -> tuple[str, str, str]:
    if isinstance(exc, MissingConfigException):
        if exc.options is not None and exc.missing_cfg_file:
            group = exc.missing_cfg_file.rpartition("/")[0]
            return group, f"{exc.missing_cfg_file!r} not found", f"use one of: {', '.join(exc.options)}"
        return exc.missing_cfg_file or "config", _first_line(exc), "check --config-name and --config-dir"
    key = getattr(exc.__cause__, "full_key", None)
    if key and is_secret_key(key.rsplit(".", 1)[-1]):
        return key, "secrets are not accepted in config", "set the provider's API key environment variable instead"
    if key and "is not in struct" in str(exc.__cause__):
        return key, "not set in this config", f"add it with +{key}=VALUE"
    if key and isinstance(exc.__cause__, (ConfigAttributeError, ConfigKeyError)):
        return key, "unknown key", "`python -m rubric_runner --cfg job` prints every key"
    if key and exc.__cause__ is not None:
        return key, _first_line(exc.__cause__), "fix the value in the override"
    if isinstance(exc, OverrideParseException):
        bad = next((arg for arg in args if not arg.startswith("-") and not _parses(arg)), "override")
        return bad, _first_line(exc), f"see {GRAMMAR}"
    if isinstance(exc, ConfigCompositionException):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        full_key = next((line.partition(":")[2].strip() for line in lines if line.startswith("full_key:")), None)
        if full_key and len(lines) > 1:  # a bad key or value inside a config file: the cause is on the next line
            where = lines[0].split("'")[1] if lines[0].startswith("In '") else "a config file"
            return full_key, lines[1], f"in {where}: fix or remove it there; `--cfg job` prints every key"
        return "", _first_line(exc), "`--help` lists the groups, `--cfg job` prints every key"
    if isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name}:{mark.line + 1}" if mark else "config file"
        return where, f"invalid YAML, {getattr(exc, 'problem', None) or _first_line(exc)}", "fix the file's syntax"
    if isinstance(exc, SearchPathException):
        return "--config-dir/hydra.searchpath", _first_line(exc), "give an existing config directory"
    if isinstance(exc, OSError):
        return "hydra.run.dir", f"cannot write {exc.filename}: {exc.strerror}", "choose a writable hydra.run.dir"
    return type(exc).__name__, _first_line(exc), "HYDRA_FULL_ERROR=1 shows the full trace"
