"""The README stays true: its plugin hooks, config keys and commands are checked against the code.

Every command in a README ``bash`` block is classified in ``COMMANDS`` below, by section and by its
text (continuation lines joined, comments left out, runs of spaces collapsed), as one of:

- ``Runs``: it needs no key, server or cluster, so it runs as written, in README order after the
  commands of its section before it, in a scratch directory that holds ``.venv`` and the files the
  section shows (code blocks whose first line is ``# <path>``), with ``.venv`` active. It must exit
  with ``exit_code`` and print each of ``says``, which the section must quote too;
- ``StopsAtKey``: it needs only a provider's key, so it runs as ``Runs`` does, with no key set: it must
  pass every check made before the first model call (presets, keys and values, import paths,
  middleware, tool settings, the price table) and stop at the missing key, each of its errors the one
  line naming the key variable, and exit with ``exit_code`` (2; a sweep's jobs each end so, and it exits 3);
- ``Composes``: it needs a key, a server or a cluster (``why``), so the test only composes its config
  (what ``--cfg job`` prints; once per value of a sweep list), which catches a misspelt preset or key
  in-process (``StopsAtKey`` checks more of a keyed command, at a process start of a few seconds each);
- ``Skipped``: it can be neither run nor composed here, and ``why``.

A command added to the README without an entry here fails ``test_every_readme_command_is_classified``,
and so does an entry whose command has left the README.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_type_hints

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from support import readme
from support.helpers import BUNDLED_PLUGINS

from rubric_runner.config.environment import API_KEY_ENV
from rubric_runner.config.schema import Config
from rubric_runner.paths import CONF_DIR
from rubric_runner.plugins import events, hookspecs
from rubric_runner.sandbox import choose


@dataclasses.dataclass(frozen=True)
class Runs:
    says: tuple[str, ...] = ()
    exit_code: int = 0
    undo: str | None = None
    """A command that takes back what this one changed outside the scratch directory."""


@dataclasses.dataclass(frozen=True)
class StopsAtKey:
    exit_code: int = 2
    """3 for a sweep, whose jobs each end in an ``error``."""


@dataclasses.dataclass(frozen=True)
class Composes:
    why: str


@dataclasses.dataclass(frozen=True)
class Skipped:
    why: str


KEY = "needs a provider's API key"
MISSING_KEY = re.compile(r"^error: [\w.,]+: .* (needs an API key|need API keys) \(set \w+_API_KEY")
DEMO_ENDS = "status: satisfied after 2 grading pass(es)"
DOCTOR_SAYS = "sandbox.isolation (how run_test_suite and plugin tools isolate generated code):"
DOCTOR_EXIT = 0 if choose("auto").backend else 1
"""``rubric-runner doctor`` exits 1 where nothing isolates code (not root, no working bubblewrap)."""
PLUGIN = "rubric-runner-wordcount"
"""The package of the README's plugin example."""

COMMANDS: dict[str, dict[str, Runs | Composes | Skipped]] = {
    "Quickstart": {
        "scripts/setup": Skipped("CI runs it before the tests (.ci/run), which run in the .venv it made"),
        "source .venv/bin/activate": Runs(),
        "rubric-runner worker=scripted grader=scripted rubric=code": Runs(says=(
            "   worker answered (8 lines, 217 chars):",
            "     x All tests pass in run_test_suite: test_unhashable fails with TypeError: unhashable type: 'list'; "
            "track seen items without a set.",
            "   verdict: satisfied - All four tests pass and the signature matches.",
            DEMO_ENDS,
        )),
        "python -m pytest": Skipped("the test suite itself, of which this test is a part"),
        "rubric-runner worker=scripted grader=scripted rubric=haiku": Runs(says=(DEMO_ENDS,)),
        "rubric-runner worker=scripted grader=scripted rubric=summary": Runs(says=(DEMO_ENDS,)),
        "rubric-runner worker=scripted grader=scripted rubric=code_tasks": Runs(says=("tasks 12 x repeats 1: 12/12 satisfied",)),
        "rubric-runner worker=scripted grader=scripted rubric=code '~grader.tools.run_test_suite'": Runs(says=(
            "grader called run_test_suite -> refused: Error: run_test_suite is not a valid tool, try one of [].",
            "! unsupported: the verdict rests on run_test_suite, which gave no evidence in this pass",
        ), exit_code=1),
    },
    "Real use": {
        "export ANTHROPIC_API_KEY=...": Skipped("sets a provider key"),
        "export OPENAI_API_KEY=...": Skipped("sets a provider key"),
        "export GOOGLE_API_KEY=...": Skipped("sets a provider key"),
        "export OPENROUTER_API_KEY=...": Skipped("sets a provider key"),
        "export FIREWORKS_API_KEY=...": Skipped("sets a provider key"),
        "export BASETEN_API_KEY=...": Skipped("sets a provider key"),
        "python -m rubric_runner grader=haiku rubric=code": Composes(KEY),
        "python -m rubric_runner worker=gpt grader=gemini rubric=haiku grader.max_iterations=5": Composes(KEY),
        "python -m rubric_runner worker.model=anthropic:claude-opus-4-7 rubric=summary": Composes(KEY),
        "python -m rubric_runner worker=gpt worker.base_url=http://localhost:8000/v1": Composes("needs a server"),
        "rubric-runner grader=haiku rubric=code": Composes(KEY),
    },
    "Many tasks, repeats, cache, regrade": {
        "python -m rubric_runner rubric=code_tasks worker=gpt run.concurrency=16 run.repeats=3 "
        "run.cache=outputs/cache.sqlite +run.rate_limits.openai=5": Composes(KEY),
        "rubric-runner worker=scripted grader=scripted rubric=code": Runs(),
        'rubric-runner regrade "$(ls -d outputs/runs/*/* | tail -1)"': Runs(says=(
            "verdict: satisfied - Graded again: the final answer still passes all four tests.",
            "regrade records: ",
        )),
    },
    "Writing a rubric": {
        "rubric-runner --config-dir my_conf rubric=strings": Composes(KEY),
        "rubric-runner --config-dir my_conf rubric=strings_plain '+grader.tools.run_test_suite={}'": Composes(KEY),
        "rubric-runner --config-dir my_conf rubric=strings worker=scripted grader=scripted "
        "worker.script=my_conf/strings_script.yaml grader.script=my_conf/strings_script.yaml": Runs(says=(
            "tasks 2 x repeats 1: 2/2 satisfied (satisfied@1 1.00, satisfied^1 1.00)",
        )),
        "rubric-runner --config-dir my_conf rubric=strings_plain '+grader.tools.run_test_suite={}' "
        "worker=scripted grader=scripted worker.script=my_conf/strings_script.yaml "
        "grader.script=my_conf/strings_script.yaml": Runs(says=("tasks 2 x repeats 1: 2/2 satisfied (satisfied@1 1.00, satisfied^1 1.00)",)),
    },
    "Can I trust my grader?": {
        "python -m rubric_runner rubric=code grader=haiku": StopsAtKey(),
        "python -m rubric_runner rubric=code '+rubric.verify.run_test_suite.wall_seconds=30'": StopsAtKey(),
        "python -m rubric_runner rubric=summary '~rubric.verify.text_stats'": StopsAtKey(),
        "python -m rubric_runner rubric=humaneval worker=scripted grader=scripted 'rubric.tasks=[0:5]'": Runs(
            says=("tasks 5 x repeats 1: 3/5 satisfied (satisfied@1 0.60, satisfied^1 0.60)",), exit_code=1),
        "python -m rubric_runner rubric=humaneval worker=gpt grader=haiku 'rubric.tasks=[0:10]'": StopsAtKey(),
        "python -m rubric_runner rubric=humaneval worker=sonnet grader=haiku 'rubric.tasks=[0:50]' "
        "hydra.run.dir=outputs/he50": StopsAtKey(),
        "rubric-runner regrade outputs/he50 -m grader=haiku,sonnet,gpt,gemini,ollama": Skipped(
            "regrades the keyed run above, which stops at its key before any transcript exists"),
        "rubric-runner regrade outputs/he50 -m prompt/grader=builtin,code_reviewer": Skipped(
            "regrades the keyed run above, which stops at its key before any transcript exists"),
        "python -m rubric_runner rubric=humaneval worker=scripted grader=scripted 'rubric.tasks=[0:5]' "
        "hydra.run.dir=outputs/humaneval-demo": Runs(
            says=("tasks 5 x repeats 1: 3/5 satisfied (satisfied@1 0.60, satisfied^1 0.60)",), exit_code=1),
        "rubric-runner regrade outputs/humaneval-demo -m 'grader.script=${package_data:scripts/judges/lenient.yaml},"
        "${package_data:scripts/judges/strict.yaml},${package_data:scripts/judges/careful.yaml}'": Runs(
            says=("1. grader.script=${package_data:scripts/judges/careful.yaml}: balanced error 0.0% (95% CI 0.0-43.2%)",
                  "2. grader.script=${package_data:scripts/judges/strict.yaml}: balanced error 50.0% (95% CI 21.9-82.9%)",
                  "2. grader.script=${package_data:scripts/judges/lenient.yaml}: balanced error 50.0% (95% CI 17.1-78.1%)"),
            exit_code=1),
    },
    "Limits and budgets": {
        "python -m rubric_runner -m worker=sonnet,gpt grader=haiku rubric=code_tasks sweep.budget_usd=5 "
        "limits.worker_calls=40 limits.wall_seconds=600 hydra.sweep.dir=outputs/capped": StopsAtKey(exit_code=3),
        "python -m rubric_runner -m worker=sonnet,gpt grader=haiku rubric=code_tasks sweep.budget_usd=8 "
        "limits.worker_calls=40 limits.wall_seconds=600 hydra.sweep.dir=outputs/capped run.resume=true": StopsAtKey(exit_code=3),
    },
    "Providers: local servers, structured output, faults": {
        "export OPENAI_API_KEY=anything-your-server-accepts": Skipped("sets a provider key"),
        "python -m rubric_runner rubric=code worker.model=openai:qwen2.5-coder worker.base_url=http://127.0.0.1:8000/v1 "
        "grader.model=openai:qwen2.5-coder grader.base_url=http://127.0.0.1:8000/v1": Composes(
            "needs a server (tests/models/test_local_models.py runs such a run against a fake one)"),
    },
    "Local models": {
        "python3 -m venv ~/llama && ~/llama/bin/pip install 'llama-cpp-python[server]'": Skipped(
            "builds llama.cpp for minutes; tests/models/test_llama_cpp.py runs this recipe when asked (marker llama_cpp)"),
        "~/llama/bin/python -m llama_cpp.server --model qwen2.5-coder-0.5b-instruct-q4_k_m.gguf "
        "--model_alias qwen2.5-coder-0.5b --host 127.0.0.1 --port 8080 --n_ctx 8192": Skipped(
            "starts a model server on a downloaded model"),
        "export OPENAI_API_KEY=unused": Skipped("sets a provider key"),
        ".venv/bin/python -m rubric_runner rubric=code worker.model=openai:qwen2.5-coder-0.5b "
        "worker.base_url=http://127.0.0.1:8080/v1 worker.max_tokens=768 grader.model=openai:qwen2.5-coder-0.5b "
        "grader.base_url=http://127.0.0.1:8080/v1 grader.max_tokens=768 worker.timeout=600 grader.timeout=600": Composes(
            "needs the llama.cpp server started above"),
    },
    "Interrupt and resume": {
        "rubric-runner resume outputs/runs/2026-12-01/10-00-00.123-8f3a-code": Skipped(
            "the dir of an interrupted run (tests/loop/test_interrupt.py resumes real ones)"),
        "python -m rubric_runner rubric=code hydra.run.dir=DIR run.resume=true": Composes(KEY),
        'rubric-runner continue outputs/runs/2026-12-01/10-00-00.123-8f3a-code "Now add a docstring"': Skipped(
            "the dir of a finished run (tests/loop/test_turns.py continues real ones)"),
        "rubric-runner continue RUN_DIR \"Now add a docstring\" rubric.text='- The function has a docstring'": Skipped(
            "RUN_DIR stands for a finished run's dir (tests/loop/test_turns.py continues real ones)"),
        'rubric-runner continue --task chunk RUN_DIR "Handle size=0" grader=gpt': Skipped(
            "RUN_DIR stands for a finished multi-task run's dir (tests/loop/test_turns.py continues real ones)"),
    },
    "Tools and plugins": {
        "rubric-runner tools": Runs(says=("run_test_suite", "count_syllables", "text_stats")),
        "rubric-runner plugins": Runs(says=("builtin_tools", "syllables", "textstats")),
        "rubric-runner doctor": Runs(says=(DOCTOR_SAYS, "  none        works: a trivial test ran in "), exit_code=DOCTOR_EXIT),
        "python -m rubric_runner tools": Runs(says=("run_test_suite", "count_syllables", "text_stats")),
        "python -m rubric_runner rubric=summary '+grader.tools.count_syllables={}'": Composes(KEY),
        "python -m rubric_runner rubric=haiku grader.tools.count_syllables.pattern=[5,7,5,7,7]": Composes(KEY),
        "python -m rubric_runner rubric=code '~grader.tools.run_test_suite'": Composes(KEY),
        "python -m rubric_runner rubric=code '+worker.tools.run_test_suite={suite: tests/my_suite.yaml}'": Composes(KEY),
    },
    "Extending the loop": {
        "PYTHONPATH=. python -m rubric_runner rubric=summary 'grader.on_evaluation=[my_loop.log_pass]'": StopsAtKey(),
        "python -m rubric_runner 'grader.middleware=[{_target_: langchain.agents.middleware.ModelRetryMiddleware, "
        "max_retries: 3}]'": StopsAtKey(),
        "python -m rubric_runner 'worker.middleware=[{_target_: langchain.agents.middleware.ModelCallLimitMiddleware, "
        "run_limit: 20}]'": StopsAtKey(),
        "PYTHONPATH=. python -m rubric_runner 'worker.middleware=[{_target_: my_loop.CountCalls, path: worker_calls.txt}]' "
        "'grader.middleware=[{_target_: my_loop.CountCalls, path: grader_calls.txt}]'": StopsAtKey(),
        "PYTHONPATH=. python -m rubric_runner rubric=summary grader=haiku "
        "grader.prepare_messages_for_grader=my_loop.task_and_answer": StopsAtKey(),
        "PYTHONPATH=. python -m rubric_runner rubric=summary '+grader.tools={my_loop.shout: {suffix: \"?!\"}}'": StopsAtKey(),
    },
    "Writing a plugin": {
        "pip install -e .": Runs(undo=f"pip uninstall --yes --quiet {PLUGIN}"),
        "rubric-runner tools": Runs(says=("word_count", "limit")),
        "rubric-runner worker=scripted grader=scripted worker.script=wordcount.yaml grader.script=wordcount.yaml "
        "'+grader.tools.word_count={limit: 50}' 'rubric.text=- The answer has at most 50 words' 'rubric.evidence=[word_count]'": Runs(
            says=('grader called word_count -> {"words": 13, "within_limit": true}',)),
    },
    "Sweeps": {
        "python -m rubric_runner -m worker=sonnet,gpt,gemini grader=haiku rubric=code,haiku": Composes(KEY),
        "python -m rubric_runner -m hydra/launcher=joblib hydra.launcher.n_jobs=4 worker=sonnet,gpt": Composes(KEY),
    },
    "Reports": {
        "rubric-runner report outputs/multirun/2026-12-01/10-00-00": Skipped(
            "the dir of a finished sweep (tests/report/test_report.py reports on real ones)"),
    },
    "Scaling out: Ray and SLURM": {
        "python -m rubric_runner -m hydra/launcher=ray_cluster hydra.launcher.ray.init.address=auto worker=sonnet,gpt "
        "rubric=code,haiku hydra.sweep.dir=/shared/rubric/sweeps/$(date +%F-%H%M)": Composes("needs a Ray cluster and keys"),
        "python -m rubric_runner -m hydra/launcher=ray_cluster hydra.launcher.ray.init.num_cpus=8 worker=sonnet,gpt": Composes(KEY),
        "python -m rubric_runner -m hydra/launcher=slurm_example hydra.launcher.partition=gpu hydra.launcher.gpus_per_node=1 "
        "worker=sonnet,gpt rubric=code,haiku hydra.sweep.dir=/shared/rubric/sweeps/$(date +%F-%H%M)": Composes(
            "needs a SLURM cluster and keys"),
        "pip install 'rubric_runner[postgres]'": Skipped("installs into the environment; scripts/setup installs this extra"),
        "export RUBRIC_RUNNER_POSTGRES_URL=postgresql://rubric@db.internal:5432/rubric": Skipped("names a database server"),
        "export PGPASSWORD=...": Skipped("sets a password"),
        "python -m rubric_runner -m hydra/launcher=slurm_example run.checkpointer=postgres worker=sonnet,gpt": Composes(
            "needs a SLURM cluster, a PostgreSQL server and keys"),
    },
    "Benchmarks": {
        ".venv/bin/python benchmarks/run.py": Skipped("takes minutes; its figures are in benchmarks/results/"),
        ".venv/bin/python benchmarks/run.py --only startup,overhead --repeats 9": Skipped(
            "takes minutes; its figures are in benchmarks/results/"),
        ".venv/bin/python benchmarks/run.py --only checkpoint_bytes,scale --tasks 10000": Skipped(
            "takes about 25 minutes; its figures are in benchmarks/results/"),
    },
}


def _entries(kind: type) -> list[tuple[str, str]]:
    return [(section, command) for section, commands in COMMANDS.items() for command, entry in commands.items()
            if isinstance(entry, kind)]


def test_every_readme_command_is_classified():
    in_readme = set(readme.all_commands())
    classified = {(section, command) for section, commands in COMMANDS.items() for command in commands}
    unclassified = sorted(in_readme - classified)
    assert not unclassified, f"classify these README commands in COMMANDS in tests/docs/test_docs.py: {unclassified}"
    gone = sorted(classified - in_readme)
    assert not gone, f"these COMMANDS entries are no longer README commands: {gone}"


def test_what_a_command_says_is_quoted_in_its_section():
    sections = readme.sections()
    for section, command in _entries(Runs):
        for said in COMMANDS[section][command].says:
            assert said in sections[section], (section, command, said)


@pytest.fixture
def shell_env():
    """The environment of a shell with ``.venv`` active, the README's plugins enabled and no provider key."""
    venv = Path(sys.prefix)
    keys = {name for names in API_KEY_ENV.values() for name in names}
    return {
        **{name: value for name, value in os.environ.items() if name not in keys},
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "RUBRIC_RUNNER_PLUGINS": f"{BUNDLED_PLUGINS},wordcount",
    }


def _scratch(section: str, root: Path) -> Path:
    """A directory with ``.venv`` and the files the section shows, as a user would have them."""
    (root / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    for path, contents in readme.files(section).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(contents, encoding="utf-8")
    return root


def _shell(command: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ends_as_expected(entry: Runs | StopsAtKey, command: str, proc: subprocess.CompletedProcess) -> None:
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, f"{command}\n{output[-3000:]}"
    if isinstance(entry, StopsAtKey):
        errors = [line for line in output.splitlines() if line.startswith("error: ")]
        assert errors and all(MISSING_KEY.search(line) for line in errors), f"{command}\n{output[-3000:]}"
    assert proc.returncode == entry.exit_code, f"{command}\nexit {proc.returncode}\n{output[-3000:]}"
    for said in getattr(entry, "says", ()):
        assert said in output, f"{command}\ndid not print {said!r}:\n{output[-3000:]}"


@pytest.mark.parametrize("section", sorted({section for section, _ in _entries(Runs) + _entries(StopsAtKey)}))
def test_readme_commands_run_and_end_as_it_says(section, tmp_path, shell_env):
    cwd = _scratch(section, tmp_path)
    undo = []
    try:
        for command in [command for title, command in readme.all_commands() if title == section]:
            entry = COMMANDS[section][command]
            if not isinstance(entry, (Runs, StopsAtKey)):
                continue
            if isinstance(entry, Runs) and entry.undo:
                undo.append(entry.undo)
            _ends_as_expected(entry, command, _shell(command, cwd, shell_env))
    finally:
        for command in undo:
            _shell(command, cwd, shell_env)


def _argv(command: str, cwd: Path, env: dict[str, str]) -> list[str]:
    """The arguments a shell gives the command (quotes removed, substitutions made)."""
    proc = _shell(f"printf '%s\\0' {command}", cwd, env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("\0")[:-1]


def _compositions(args: list[str]) -> list[list[str]]:
    """The overrides of the single runs a command's arguments stand for: ``-m`` left out, one run per value of
    the longest sweep list (shorter lists keep their last value), ``--config-dir DIR`` as a search path."""
    overrides, args = [], [a for a in args if a not in ("-m", "--multirun")]
    while args:
        arg = args.pop(0)
        overrides.append(f"hydra.searchpath=[file://{Path(args.pop(0)).resolve()}]" if arg in ("--config-dir", "-cd") else arg)
    parsed = OverridesParser.create().parse_overrides(overrides)
    values = [list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.input_line] for o in parsed]
    keys = [f"{o.get_key_element()}=" if o.is_sweep_override() else "" for o in parsed]
    return [
        [key + choices[min(i, len(choices) - 1)] for key, choices in zip(keys, values)]
        for i in range(max((len(v) for v in values), default=1))
    ]


@pytest.mark.parametrize(("section", "command"), _entries(Composes))
def test_readme_commands_that_need_a_provider_compose(section, command, tmp_path, shell_env, monkeypatch):
    """The config each run of the command would compose (``--cfg job`` shows it), with the schema's checks."""
    monkeypatch.chdir(_scratch(section, tmp_path))
    argv = _argv(command, Path.cwd(), shell_env)
    program = 3 if argv[1:3] == ["-m", "rubric_runner"] else 1
    assert argv[:program] in (["python", "-m", "rubric_runner"], [".venv/bin/python", "-m", "rubric_runner"],
                              ["rubric-runner"]), argv
    for overrides in _compositions(argv[program:]):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
        assert cfg.rubric.name and cfg.worker.model and cfg.grader.model


def test_a_sweep_composes_once_per_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = f"hydra.searchpath=[file://{tmp_path / 'c'}]"
    assert _compositions(["-m", "--config-dir", "c", "worker=sonnet,gpt,gemini", "rubric=code,haiku", "+a.b=[1,2]"]) == [
        [path, "worker=sonnet", "rubric=code", "+a.b=[1,2]"],
        [path, "worker=gpt", "rubric=haiku", "+a.b=[1,2]"],
        [path, "worker=gemini", "rubric=haiku", "+a.b=[1,2]"],
    ]


def test_a_misspelt_override_does_not_compose():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"), pytest.raises(Exception, match="partitionn"):
        compose(config_name="config", overrides=_compositions(["hydra/launcher=slurm_example", "hydra.launcher.partitionn=gpu"])[0],
                return_hydra_config=True)


def _schema_keys(schema: type, prefix: str = "") -> list[str]:
    keys = []
    for name, hint in get_type_hints(schema).items():
        keys += _schema_keys(hint, f"{prefix}{name}.") if dataclasses.is_dataclass(hint) else [f"{prefix}{name}"]
    return keys


def _key_table() -> set[str]:
    """The keys the README's key table names (``*.x`` stands for ``worker.x`` and ``grader.x``)."""
    table = readme.text().split("| key | meaning |\n", 1)[1].split("\n\n", 1)[0]
    names = [name for row in table.splitlines()[1:] for name in re.findall(r"`([^`]+)`", row.split("|")[1])]
    return {expanded for name in names for expanded in ([f"worker.{name[2:]}", f"grader.{name[2:]}"]
                                                        if name.startswith("*.") else [name])}


def test_every_config_key_is_in_the_key_table():
    schema = set(_schema_keys(Config))
    assert {"worker.model", "grader.structured_output", "run.preview_chars", "tags"} <= schema  # the walk works
    assert sorted(schema - _key_table()) == []


def test_the_key_table_names_only_config_keys():
    assert sorted(_key_table() - set(_schema_keys(Config))) == []


HOOKS = [name for name, obj in vars(hookspecs).items() if hasattr(obj, "rubric_runner_spec")]


def test_there_are_hooks():
    assert "register_tools" in HOOKS  # the introspection finds the hookspecs


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    signature = f"{hook}({', '.join(inspect.signature(getattr(hookspecs, hook)).parameters)})"
    assert f"### {signature}\n" in readme.sections()["Writing a plugin"]


EVENT_HOOKS = {hook: next(name for name in events.__all__ if f"``{name}``" in getattr(hookspecs, hook).__doc__)
               for hook in HOOKS if hook.startswith("on_")}


def _hook_section(hook: str) -> str:
    """The README's ``### hook(...)`` subsection of "Writing a plugin"."""
    parts = re.split(r"^### ", readme.sections()["Writing a plugin"], flags=re.MULTILINE)
    return next(part for part in parts if part.startswith(f"{hook}("))


def test_every_event_hook_is_handed_an_event_object():
    assert sorted(EVENT_HOOKS.values()) == sorted(events.__all__)


@pytest.mark.parametrize("hook", EVENT_HOOKS)
def test_each_field_of_a_hooks_event_is_documented(hook):
    event = getattr(events, EVENT_HOOKS[hook])
    assert dataclasses.fields(event) and event.__dataclass_params__.frozen
    section = _hook_section(hook)
    assert re.search(rf"`(rubric_runner\.plugins\.events\.)?{event.__name__}`", section)
    for field in dataclasses.fields(event):
        assert f"`event.{field.name}`" in section, field.name


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_takes_keywords_and_says_what_it_is_in_one_line(hook):
    spec = getattr(hookspecs, hook)
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in inspect.signature(spec).parameters.values())
    assert spec.__doc__ and "\n" not in spec.__doc__.strip()


def test_a_readme_block_names_the_file_it_shows():
    block = readme.Block("s", "yaml", textwrap.dedent("""\
        # @package _global_
        # my_conf/rubric/x.yaml: a preset
        rubric: {}
    """))
    assert readme.file_path(block) == "my_conf/rubric/x.yaml"
    assert readme.file_path(readme.Block("s", "yaml", "- name: a step\n")) is None
    assert readme.commands(readme.Block("s", "bash", "# a comment\nrun a \\\n    'b # c'   # says d\n\n")) == ["run a 'b # c'"]
