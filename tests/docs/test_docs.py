"""The docs stay true: every command of README.md and of every page under docs/ is run or composed, the
generated references cover the code, and the site builds in strict mode.

Every command in a ``bash`` block of a page is classified in ``COMMANDS`` below, by section
(``<page> > <## title>``, see ``support.readme``) and by its text (continuation lines joined, comments left
out, runs of spaces collapsed), as one of:

- ``Runs``: it needs no key, server or cluster, so it runs as written, in page order after the commands
  of its section before it, in a scratch directory that holds ``.venv`` and the files the section shows
  (code blocks whose first line is ``# <path>``), with ``.venv`` active. It must exit with ``exit_code``
  and print each of ``says``, which the section must quote too;
- ``StopsAtKey``: it needs only a provider's key, so it runs as ``Runs`` does, with no key set: it must
  pass every check made before the first model call (presets, keys and values, import paths,
  middleware, tool settings, the price table) and stop at the missing key, each of its errors the one
  line naming the key variable, and exit with ``exit_code`` (2; a sweep's jobs each end so, and it exits 3);
- ``Composes``: it needs a key, a server or a cluster (``why``), so the test only composes its config
  (what ``--cfg job`` prints; once per value of a sweep list), which catches a misspelt preset or key
  in-process (``StopsAtKey`` checks more of a keyed command, at a process start of a few seconds each);
- ``Skipped``: it can be neither run nor composed here, and ``why``.

A command added to a page without an entry here fails ``test_every_command_is_classified``, naming the
page and line, and so does an entry whose command has left its page. A failing command names its page
and line too.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import get_type_hints

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from support import readme
from support.browser import headless_chromium
from support.helpers import BUNDLED_PLUGINS, ROOT

from rubric_runner.config.schema import Config
from rubric_runner.environment import API_KEY_ENV
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
BUILT = "builds the site into site/; test_the_site_builds_in_strict_mode builds it into a temporary dir"
MISSING_KEY = re.compile(r"^error: [\w.,]+: .* (needs an API key|need API keys) \(set \w+_API_KEY")
DEMO_ENDS = "status: satisfied after 2 grading pass(es)"
REPO_TASKS_END = "tasks 8 x repeats 1: 8/8 satisfied (satisfied@1 1.00, satisfied^1 1.00)"
DOCTOR_SAYS = "sandbox.isolation (how run_test_suite and plugin tools isolate generated code):"
DOCTOR_EXIT = 0 if choose("auto").backend else 1
"""``rubric-runner doctor`` exits 1 where nothing isolates code (not root, no working bubblewrap)."""
PLUGIN = "rubric-runner-wordcount"
"""The package of the plugin example (tools-and-plugins.md)."""
LATE_PAGES = {"loop-controls.md", "grader-agreement.md", "ci-and-integrations.md", "clusters.md"}
"""Pages written beside this test by others: one not yet in mkdocs.yml's nav came after the docs were put
together, and its unclassified commands are reported (a warning), not failed, until it joins the nav."""

COMMANDS: dict[str, dict[str, Runs | StopsAtKey | Composes | Skipped]] = {
    "README.md > Quickstart": {
        "scripts/setup": Skipped("CI runs it before the tests (.ci/run), which run in the .venv it made"),
        "source .venv/bin/activate": Runs(),
        "rubric-runner worker=scripted grader=scripted rubric=code": Runs(says=(
            "   verdict: satisfied - All four tests pass and the signature matches.",
            "hidden verification: first answer failed, final answer passed",
            DEMO_ENDS,
        )),
        "rubric-runner worker=scripted grader=scripted rubric=repo_tasks": Runs(says=(REPO_TASKS_END,)),
        "python -m pytest": Skipped("the test suite itself, of which this test is a part"),
    },
    "README.md > Real use": {
        "export ANTHROPIC_API_KEY=...": Skipped("sets a provider key"),
        "python -m rubric_runner grader=haiku rubric=code": Composes(KEY),
    },
    "README.md > Testing": {
        'python -m pytest -m "not (cluster or postgres or bwrap or browser or cli or slow)"': Skipped(
            "a tier of the test suite, of which this test is a part; tests/docs/test_tiers.py checks its markers"),
    },
    "README.md > Documentation": {
        ".venv/bin/mkdocs build --strict": Skipped(BUILT),
    },
    "getting-started.md > Quickstart": {
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
    "getting-started.md > Real use": {
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
    "rubrics-and-task-sets.md > Many tasks, repeats, cache": {
        "python -m rubric_runner rubric=code_tasks worker=gpt run.concurrency=16 run.repeats=3 "
        "run.cache=outputs/cache.sqlite +run.rate_limits.openai=5": Composes(KEY),
    },
    "agentic-tasks.md > The demo": {
        "rubric-runner worker=scripted grader=scripted rubric=repo_tasks": Runs(says=(REPO_TASKS_END,)),
    },
    "agentic-tasks.md > Your own repo": {
        "rubric-runner --config-dir my_conf rubric=calc worker=scripted grader=scripted "
        "worker.script=my_conf/calc_script.yaml grader.script=my_conf/calc_script.yaml": Runs(says=(
            "   verdict: satisfied - run_tests passes; the tests are as given.",
            "hidden verification: first answer passed, final answer passed",
            "status: satisfied after 1 grading pass(es)",
        )),
        "rubric-runner --config-dir my_conf rubric=calc": StopsAtKey(),
    },
    "rubrics-and-task-sets.md > Writing a rubric": {
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
    "trusting-the-grader.md > Can I trust my grader?": {
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
    "limits-and-budgets.md > Limits and budgets": {
        "python -m rubric_runner -m worker=sonnet,gpt grader=haiku rubric=code_tasks sweep.budget_usd=5 "
        "limits.worker_calls=40 limits.wall_seconds=600 hydra.sweep.dir=outputs/capped": StopsAtKey(exit_code=3),
        "python -m rubric_runner -m worker=sonnet,gpt grader=haiku rubric=code_tasks sweep.budget_usd=8 "
        "limits.worker_calls=40 limits.wall_seconds=600 hydra.sweep.dir=outputs/capped run.resume=true": StopsAtKey(exit_code=3),
    },
    "providers.md > Providers: local servers, structured output, faults": {
        "export OPENAI_API_KEY=anything-your-server-accepts": Skipped("sets a provider key"),
        "python -m rubric_runner rubric=code worker.model=openai:qwen2.5-coder worker.base_url=http://127.0.0.1:8000/v1 "
        "grader.model=openai:qwen2.5-coder grader.base_url=http://127.0.0.1:8000/v1": Composes(
            "needs a server (tests/models/test_local_models.py runs such a run against a fake one)"),
    },
    "providers.md > Local models": {
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
    "resume-regrade-continue.md > Interrupt and resume": {
        "rubric-runner resume outputs/runs/2026-12-01/10-00-00.123-8f3a-code": Skipped(
            "the dir of an interrupted run (tests/loop/test_interrupt.py resumes real ones)"),
        "python -m rubric_runner rubric=code hydra.run.dir=DIR run.resume=true": Composes(KEY),
    },
    "resume-regrade-continue.md > Follow-up turns": {
        'rubric-runner continue outputs/runs/2026-12-01/10-00-00.123-8f3a-code "Now add a docstring"': Skipped(
            "the dir of a finished run (tests/loop/test_turns.py continues real ones)"),
        "rubric-runner continue RUN_DIR \"Now add a docstring\" rubric.text='- The function has a docstring'": Skipped(
            "RUN_DIR stands for a finished run's dir (tests/loop/test_turns.py continues real ones)"),
        'rubric-runner continue --task chunk RUN_DIR "Handle size=0" grader=gpt': Skipped(
            "RUN_DIR stands for a finished multi-task run's dir (tests/loop/test_turns.py continues real ones)"),
    },
    "resume-regrade-continue.md > Regrade": {
        "rubric-runner worker=scripted grader=scripted rubric=code": Runs(),
        'rubric-runner regrade "$(ls -d outputs/runs/*/* | tail -1)"': Runs(says=(
            "verdict: satisfied - Graded again: the final answer still passes all four tests.",
            "regrade records: ",
        )),
    },
    "tools-and-plugins.md > Tools and plugins": {
        "rubric-runner tools": Runs(says=("run_test_suite", "count_syllables", "text_stats")),
        "rubric-runner plugins": Runs(says=("builtin_tools", "syllables", "textstats")),
        "rubric-runner doctor": Runs(says=(DOCTOR_SAYS, "  none        works: a trivial test ran in "), exit_code=DOCTOR_EXIT),
        "python -m rubric_runner tools": Runs(says=("run_test_suite", "count_syllables", "text_stats")),
        "python -m rubric_runner rubric=summary '+grader.tools.count_syllables={}'": Composes(KEY),
        "python -m rubric_runner rubric=haiku grader.tools.count_syllables.pattern=[5,7,5,7,7]": Composes(KEY),
        "python -m rubric_runner rubric=code '~grader.tools.run_test_suite'": Composes(KEY),
        "python -m rubric_runner rubric=code '+worker.tools.run_test_suite={suite: tests/my_suite.yaml}'": Composes(KEY),
    },
    "extending-the-loop.md > Extending the loop": {
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
    "tools-and-plugins.md > Writing a plugin": {
        "pip install -e .": Runs(undo=f"pip uninstall --yes --quiet {PLUGIN}"),
        "rubric-runner tools": Runs(says=("word_count", "limit")),
        "rubric-runner worker=scripted grader=scripted worker.script=wordcount.yaml grader.script=wordcount.yaml "
        "'+grader.tools.word_count={limit: 50}' 'rubric.text=- The answer has at most 50 words' 'rubric.evidence=[word_count]'": Runs(
            says=('grader called word_count -> {"words": 13, "within_limit": true}',)),
    },
    "sweeps-and-launchers.md > Sweeps": {
        "python -m rubric_runner -m worker=sonnet,gpt,gemini grader=haiku rubric=code,haiku": Composes(KEY),
        "python -m rubric_runner -m hydra/launcher=joblib hydra.launcher.n_jobs=4 worker=sonnet,gpt": Composes(KEY),
    },
    "reports.md > Reports": {
        "rubric-runner report outputs/multirun/2026-12-01/10-00-00": Skipped(
            "the dir of a finished sweep (tests/report/test_report.py reports on real ones)"),
    },
    "reports.md > What report.html looks like": {
        "rubric-runner -m worker=scripted grader=scripted rubric=humaneval 'rubric.tasks=[0:5]' grader.max_iterations=1,3": Skipped(
            "test_the_reports_screenshots_are_taken_from_a_real_sweep runs it (into a temporary sweep dir) and "
            "screenshots its report.html"),
    },
    "sweeps-and-launchers.md > Scaling out: Ray and SLURM": {
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
    "benchmarks.md > Benchmarks": {
        ".venv/bin/python benchmarks/run.py": Skipped("takes minutes; its figures are in benchmarks/results/"),
        ".venv/bin/python benchmarks/run.py --only startup,overhead --repeats 9": Skipped(
            "takes minutes; its figures are in benchmarks/results/"),
        ".venv/bin/python benchmarks/run.py --only checkpoint_bytes,scale --tasks 10000": Skipped(
            "takes about 25 minutes; its figures are in benchmarks/results/"),
        ".venv/bin/python benchmarks/run.py --only workspace": Skipped("takes a minute; its figures are in benchmarks/results/"),
    },
    "benchmarks.md > The test suite's cost": {
        ".venv/bin/python benchmarks/suite_cpu.py": Skipped("runs the whole suite; its figures are in benchmarks/results/"),
    },
    "architecture.md > How the docs stay true": {
        ".venv/bin/mkdocs build --strict": Skipped(BUILT),
        ".venv/bin/mkdocs serve": Skipped("serves the site until stopped; test_the_site_builds_in_strict_mode builds it"),
    },
    # The pages below are written by others beside this test (LATE_PAGES); their commands are classified here.
    "loop-controls.md > Does the loop help?": {
        "rubric-runner -m worker=scripted grader=scripted rubric=humaneval 'rubric.tasks=[0:10]' loop=rubric,resample,single": Runs(
            exit_code=1),
    },
    "loop-controls.md > Which loop policy?": {
        "rubric-runner -m worker=scripted grader=scripted rubric=humaneval 'rubric.tasks=[0:10]' loop.returns=last,best "
        "hydra.sweep.dir=outputs/policies-humaneval": Runs(exit_code=1),
        "rubric-runner policies outputs/policies-humaneval": Runs(says=(
            "policies: 20 runs under outputs/policies-humaneval, on the hidden checks",
            "| loop.returns=last | best | loop.returns=best | 10 | 7/10 (70.0%, 95% CI 39.7-89.2%) | 7/10 (70.0%, 95% CI 39.7-89.2%) "
            "| 10/10 | 32,952 | 32,952 | 0.0% | n/a | n/a |")),
        "rubric-runner -m worker=scripted grader=scripted rubric=code_tasks loop.stop=none,no_gain "
        "hydra.sweep.dir=outputs/policies-code": Runs(),
        "rubric-runner policies outputs/policies-code": Runs(says=(
            "policies: 24 runs under outputs/policies-code, on the grader's verdicts",
            "| loop.stop=none | stop=no_gain:1 | loop.stop=no_gain | 12 | 12/12 (100.0%, 95% CI 75.8-100.0%) "
            "| 12/12 (100.0%, 95% CI 75.8-100.0%) | 12/12 | 28,602 | 28,602 | 0.0% | n/a | n/a |")),
    },
    "loop-controls.md > What checking every attempt costs": {
        ".venv/bin/python benchmarks/run.py --only attempt_checks --repeats 9": Skipped(
            "a benchmark: takes minutes; its figures are in benchmarks/results/"),
    },
    "grader-agreement.md > Repeat grading": {
        "python -m rubric_runner rubric=humaneval worker=scripted grader=scripted 'rubric.tasks=[0:5]' "
        "hydra.run.dir=outputs/humaneval-demo": Runs(exit_code=1),
        "rubric-runner regrade --repeats 3 outputs/humaneval-demo -m 'grader.script=${package_data:scripts/judges/steady.yaml},"
        "${package_data:scripts/judges/wavering.yaml}'": Runs(exit_code=1),
    },
    "grader-agreement.md > People's labels and the review page": {
        "rubric-runner review --blind outputs/humaneval-demo": Skipped(
            "serves the review page until Ctrl-C (tests/report/test_review_page.py drives it)"),
    },
    "grader-agreement.md > Golden transcripts": {
        "rubric-runner golden --from-checks outputs/humaneval-demo outputs/humaneval-golden": Skipped(
            "needs the run the Repeat grading section makes (in another scratch dir here); the golden tests make such sets"),
        "rubric-runner regrade outputs/humaneval-golden 'grader.script=${package_data:scripts/judges/lenient.yaml}'": Skipped(
            "regrades the golden dir the command before makes"),
    },
    "ci-and-integrations.md > Comparing two evaluations: `rubric-runner compare`": {
        "rubric-runner worker=scripted grader=scripted rubric=code_tasks hydra.run.dir=eval/base": Runs(),
        "rubric-runner worker=scripted grader=scripted rubric=code_tasks hydra.run.dir=eval/new": Runs(),
        "rubric-runner compare eval/base eval/new --markdown eval/compare.md --fail-on-regression": Runs(says=(
            "compare: 0 regressed, 0 improved of 12 cases; exact McNemar p = 1.0; gate passed -> exit 0",)),
    },
    "ci-and-integrations.md > JUnit XML: `report --junit`": {
        "rubric-runner worker=scripted grader=scripted rubric=code_tasks hydra.run.dir=eval/new": Runs(),
        "rubric-runner report eval/new --junit eval/junit.xml": Runs(says=(
            "report: 12 runs in 1 job: 12 satisfied; satisfied rate 100.0% -> exit 0",)),
    },
    "ci-and-integrations.md > Task sets in other formats": {
        "rubric-runner rubric=code_tasks rubric.dataset=samples.jsonl +rubric.fields.task=input": Composes(
            "needs a provider's API key and a samples.jsonl of your own"),
        "rubric-runner rubric.dataset=hf:me/arith:test +rubric.fields.task=question +rubric.fields.target=answer": Composes(
            "needs a provider's API key and a dataset in the Hugging Face cache"),
    },
    "ci-and-integrations.md > OpenTelemetry": {
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 rubric-runner worker=scripted grader=scripted rubric=code_tasks": Skipped(
            "sends traces to an OTLP collector at localhost:4318 (tests/observe/test_otel.py runs one)"),
    },
    "errors.md > The common ones": {
        "rubric-runner worker=nope": Runs(says=("error: worker: 'worker/nope' not found (use one of: ",), exit_code=2),
        "rubric-runner grader.max_iterationz=5": Runs(says=(
            "error: grader.max_iterationz: unknown key (`python -m rubric_runner --cfg job` prints every key)",), exit_code=2),
        "rubric-runner worker=scripted grader=scripted grader.max_iterations=0": Runs(says=(
            "error: grader.max_iterations: must be a positive integer, got 0 (e.g. grader.max_iterations=3)",), exit_code=2),
        "rubric-runner frobnicate": Runs(says=("error: frobnicate: neither a command nor an override (commands: ",), exit_code=2),
        "rubric-runner worker=scripted rubric=code": Runs(says=(
            "error: grader.model: anthropic:claude-haiku-4-5 needs an API key (set ANTHROPIC_API_KEY in the environment, "
            "or run offline with worker=scripted grader=scripted)",), exit_code=2),
        "rubric-runner worker=scripted grader=scripted rubric=code grader.tools.run_test_suite.suite=x.yaml": Runs(says=(
            "error: grader.tools.run_test_suite.suite: Path does not point to a file, got 'x.yaml' (fix the setting's value)",),
            exit_code=2),
        "rubric-runner worker=scripted grader=scripted run.budget_usd=5 worker.model=openai:gpt-9": Runs(says=(
            "error: run.budget_usd: openai:gpt-9 (worker.model) has no price in ",
            " (add it to the price table (sweep.prices=FILE), or budget in tokens: run.budget_tokens)"), exit_code=2),
    },
}


def _entries(kind: type) -> list[tuple[str, str]]:
    return [(section, command) for section, commands in COMMANDS.items() for command, entry in commands.items()
            if isinstance(entry, kind)]


def _nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names, in order."""
    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)
    return [page for page in walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]) if page.endswith(".md")]


def test_every_command_is_classified():
    on_pages = readme.all_commands()
    classified = {(section, command) for section, commands in COMMANDS.items() for command in commands}
    nav = set(_nav_pages())
    late = [c for c in on_pages if (c.section, c.text) not in classified and c.page in LATE_PAGES - nav]
    for command in late:
        warnings.warn(f"{command.where}: not yet classified (a page not yet in the nav): {command.text}", stacklevel=1)
    unclassified = [f"{c.where}: [{c.section}] {c.text}" for c in on_pages
                    if (c.section, c.text) not in classified and c not in late]
    assert not unclassified, "classify these commands in COMMANDS in tests/docs/test_docs.py:\n" + "\n".join(unclassified)
    gone = sorted(classified - {(c.section, c.text) for c in on_pages})
    assert not gone, f"these COMMANDS entries are no longer commands of their page's section: {gone}"


def test_what_a_command_says_is_quoted_in_its_section():
    sections = readme.sections()
    for section, command in _entries(Runs):
        for said in COMMANDS[section][command].says:
            assert said in sections[section], (section, command, said)


def test_the_readme_keeps_the_fresh_machine_commands_and_is_short():
    """.ci/run and a newcomer rely on these commands, as the README gives them."""
    assert len(readme.text().splitlines()) <= 200
    quickstart = [c.text for c in readme.all_commands() if c.section == "README.md > Quickstart"]
    assert quickstart == ["scripts/setup", "source .venv/bin/activate",
                          "rubric-runner worker=scripted grader=scripted rubric=code",
                          "rubric-runner worker=scripted grader=scripted rubric=repo_tasks", "python -m pytest"]
    assert "scripts/setup && .venv/bin/python -m pytest" in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_type_checker_and_the_linter_and_stops_at_a_finding(tmp_path):
    """``.ci/run`` stops at the first failing step; mypy, as pyproject.toml sets it up, fails on a type error."""
    steps = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "set -euo pipefail" in steps and ".venv/bin/mypy" in steps
    assert ".venv/bin/ruff check rubric_runner plugins tests benchmarks" in steps
    (tmp_path / "wrong.py").write_text("def half(n: int) -> int:\n    return n / 2\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
                           str(tmp_path / "wrong.py")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Incompatible return value type" in proc.stdout, proc.stdout + proc.stderr


def test_the_readme_links_to_pages_that_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.text())
    assert links and all((ROOT / link).exists() for link in links if "://" not in link), links


def test_the_source_files_the_pages_name_exist():
    named = {(page.name, path) for page in (ROOT / "docs").glob("*.md")
             for path in re.findall(r"\b(?:rubric_runner|tests|benchmarks|scripts)/[\w/]+\.py\b", page.read_text())}
    assert named and not [(page, path) for page, path in sorted(named) if not (ROOT / path).exists()]


@pytest.fixture
def shell_env():
    """The environment of a shell with ``.venv`` active, the docs' plugins enabled and no provider key."""
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


def _ends_as_expected(entry: Runs | StopsAtKey, command: readme.Command, proc: subprocess.CompletedProcess) -> None:
    output, where = proc.stdout + proc.stderr, f"{command.where}: {command.text}"
    assert "Traceback" not in output, f"{where}\n{output[-3000:]}"
    if isinstance(entry, StopsAtKey):
        errors = [line for line in output.splitlines() if line.startswith("error: ")]
        assert errors and all(MISSING_KEY.search(line) for line in errors), f"{where}\n{output[-3000:]}"
    assert proc.returncode == entry.exit_code, f"{where}\nexit {proc.returncode}\n{output[-3000:]}"
    for said in getattr(entry, "says", ()):
        assert said in output, f"{where}\ndid not print {said!r}:\n{output[-3000:]}"


@pytest.mark.parametrize("section", sorted({section for section, _ in _entries(Runs) + _entries(StopsAtKey)}))
def test_commands_run_and_end_as_their_page_says(section, tmp_path, shell_env):
    cwd = _scratch(section, tmp_path)
    undo = []
    try:
        for command in [c for c in readme.all_commands() if c.section == section]:
            entry = COMMANDS[section][command.text]
            if not isinstance(entry, (Runs, StopsAtKey)):
                continue
            if isinstance(entry, Runs) and entry.undo:
                undo.append(entry.undo)
            _ends_as_expected(entry, command, _shell(command.text, cwd, shell_env))
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


def _where(section: str, command: str) -> str:
    found = [c.where for c in readme.all_commands() if (c.section, c.text) == (section, command)]
    return found[0] if found else section


@pytest.mark.parametrize(("section", "command"), _entries(Composes))
def test_commands_that_need_a_provider_compose(section, command, tmp_path, shell_env, monkeypatch):
    """The config each run of the command would compose (``--cfg job`` shows it), with the schema's checks."""
    monkeypatch.chdir(_scratch(section, tmp_path))
    argv = _argv(command, Path.cwd(), shell_env)
    program = 3 if argv[1:3] == ["-m", "rubric_runner"] else 1
    assert argv[:program] in (["python", "-m", "rubric_runner"], [".venv/bin/python", "-m", "rubric_runner"],
                              ["rubric-runner"]), (_where(section, command), argv)
    for overrides in _compositions(argv[program:]):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            try:
                cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            except Exception as exc:
                raise AssertionError(f"{_where(section, command)}: {command}\ndoes not compose: {exc}") from exc
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


def test_a_page_block_names_the_file_it_shows_and_its_commands_their_lines():
    block = readme.Block("p.md > s", "yaml", textwrap.dedent("""\
        # @package _global_
        # my_conf/rubric/x.yaml: a preset
        rubric: {}
    """))
    assert readme.file_path(block) == "my_conf/rubric/x.yaml"
    assert readme.file_path(readme.Block("s", "yaml", "- name: a step\n")) is None
    bash = readme.Block("p.md > s", "bash", "# a comment\nrun a \\\n    'b # c'   # says d\n\nrun e\n", line=10)
    assert readme.commands(bash) == ["run a 'b # c'", "run e"]
    assert readme.numbered_commands(bash) == [("run a 'b # c'", 11), ("run e", 14)]


def test_every_page_is_read_and_its_lines_found():
    read = {b.page for b in readme.blocks()}
    assert {"README.md", "getting-started.md", "tools-and-plugins.md", "errors.md"} <= read
    assert {readme.page_name(p) for p in readme.pages()} >= {p.relative_to(readme.DOCS).as_posix()
                                                              for p in readme.DOCS.rglob("*.md")}
    for command in readme.all_commands():
        line = readme.page_path(command.page).read_text(encoding="utf-8").splitlines()[command.line - 1]
        assert command.text.split()[0] in line, (command.where, line)


# --- the site ------------------------------------------------------------------------------------------------

def test_every_page_is_in_the_nav():
    nav = _nav_pages()
    assert len(nav) == len(set(nav)) >= 10
    pages = {p.relative_to(readme.DOCS).as_posix() for p in readme.DOCS.rglob("*.md")}
    assert [page for page in nav if page not in pages] == []
    missing = sorted(pages - set(nav) - LATE_PAGES)
    assert missing == [], f"add these pages to mkdocs.yml's nav: {missing}"


def test_the_site_builds_in_strict_mode(tmp_path):
    """A broken link or anchor, a missing page or a generated part that fails ends the build."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    print(f"mkdocs build --strict: {time.monotonic() - started:.1f} s")
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")}
    assert {f"{page[:-3]}/index.html" for page in _nav_pages() if page != "index.md"} <= built
    config = (tmp_path / "site" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "<code>sandbox.isolation</code>" in config and "generated:" not in config


def test_site_is_not_committed():
    assert "site/" in (ROOT / ".gitignore").read_text().split()


# --- generated references ---------------------------------------------------------------------------------

def _schema_keys(schema: type, prefix: str = "") -> list[str]:
    keys = []
    for name, hint in get_type_hints(schema).items():
        keys += _schema_keys(hint, f"{prefix}{name}.") if dataclasses.is_dataclass(hint) else [f"{prefix}{name}"]
    return keys


def _reference_rows() -> dict[str, list[str]]:
    """The generated key table of configuration.md, as the site shows it: key -> its cells."""
    table = readme.text("configuration.md", expanded=True).split("| key | type | default | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = [re.split(r"(?<!\\)\|", row)[1:-1] for row in table.splitlines()[2:]]
    return {row[0].strip().strip("`"): [cell.strip() for cell in row] for row in rows}


def test_every_config_key_is_in_the_reference_with_its_type_default_and_meaning():
    schema = _schema_keys(Config)
    assert {"worker.model", "grader.structured_output", "run.preview_chars", "tags"} <= set(schema)  # the walk works
    rows = _reference_rows()
    assert list(rows) == schema
    for key, (_, kind, default, meaning) in rows.items():
        assert kind and default and meaning, key
    assert rows["grader.max_iterations"][1:3] == ["int", "`3`"]
    preset = yaml.safe_load((CONF_DIR / "model" / "sonnet.yaml").read_text())["model"]
    assert rows["worker.model"][2] == f"`required` (presets: `{preset}`)"


def test_the_reference_names_every_config_group():
    groups = readme.text("configuration.md", expanded=True)
    for folder in ("worker", "grader", "rubric", "prompt/worker", "prompt/grader"):
        options = sorted(p.stem for p in (CONF_DIR / folder).glob("*.yaml"))
        assert f"| `{folder}` | {', '.join(f'`{o}`' for o in options)} |" in groups, folder


HOOKS = [name for name, obj in vars(hookspecs).items() if hasattr(obj, "rubric_runner_spec")]


def test_there_are_hooks():
    assert "register_tools" in HOOKS  # the introspection finds the hookspecs
    assert readme.generator().hooks() == HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    signature = f"{hook}({', '.join(inspect.signature(getattr(hookspecs, hook)).parameters)})"
    assert f"### {signature}\n" in readme.sections(expanded=True)["Writing a plugin"]


EVENT_HOOKS = {hook: next(name for name in events.__all__ if f"``{name}``" in getattr(hookspecs, hook).__doc__)
               for hook in HOOKS if hook.startswith("on_")}


def _hook_section(hook: str) -> str:
    """The ``### hook(...)`` subsection of "Writing a plugin", as the site shows it."""
    parts = re.split(r"^### ", readme.sections(expanded=True)["Writing a plugin"], flags=re.MULTILINE)
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
        row = next(line for line in section.splitlines() if line.startswith(f"| `event.{field.name}` |"))
        assert row.rstrip(" |").rsplit("|", 1)[1].strip(), f"event.{field.name} has no docstring in plugins/events.py"


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_takes_keywords_and_says_what_it_is_in_one_line(hook):
    spec = getattr(hookspecs, hook)
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in inspect.signature(spec).parameters.values())
    assert spec.__doc__ and "\n" not in spec.__doc__.strip()


def test_the_cli_reference_has_every_command_and_its_options():
    from rubric_runner.cli import build_parser

    page = readme.text("cli.md", expanded=True)
    for name, command in build_parser(with_plugins=False).commands.items():
        assert f"## rubric-runner {name}\n" in page and f"usage: rubric-runner {name}" in page, name
        for action in command._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)


def test_the_python_api_reference_has_every_function_and_record_field():
    import rubric_runner.api as api
    from rubric_runner.records import RunRecord, TaskRecord

    page = readme.text("python-api.md", expanded=True)
    for name in ("run", "resume", "continue_run", "regrade"):
        assert f"### rubric_runner.{name}\n" in page and getattr(api, name).__doc__.split()[0] in page, name
    for model in (RunRecord, TaskRecord):
        section = page.split(f"### {model.__name__}\n", 1)[1].split("\n### ", 1)[0]
        for field in model.model_fields:
            assert f"| `{field}` |" in section, (model.__name__, field)


def test_the_python_api_example_runs_as_written(tmp_path, shell_env):
    [example] = [b.text for b in readme.blocks() if b.page == "python-api.md" and b.lang == "python"
                 and b.text.startswith("import rubric_runner")]
    proc = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=shell_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "satisfied 0 2\nneeds_revision ['All tests pass in run_test_suite']\nsatisfied []\n" in proc.stdout


def test_the_errors_reference_has_every_usage_error():
    from rubric_runner.errors import UsageError

    found = readme.generator().usage_errors()
    assert len(found) >= 60
    page = readme.text("errors.md", expanded=True)
    for where, line, _ in found:
        assert f"(line {line})" in page and where in page
    raised = str(UsageError("grader.max_iterations", "must be a positive integer, got 0", "e.g. grader.max_iterations=3"))
    assert f"error: {raised}" in readme.text("errors.md")
    assert any(text == "{key}: unknown key (`python -m rubric_runner --cfg job` prints every key)" for _, _, text in found)


# --- the reports' screenshots ------------------------------------------------------------------------------

IMAGES = readme.DOCS / "images"
SHOTS = {
    "report-overview.png": ("", None),
    "report-judges.png": ("", "h2:has(+ p + .wide #judges), #judges, #answers"),
    "report-trail.png": ("#run-6", "tr:has(+ tr.trail-row:not([hidden])), tr.trail-row:not([hidden])"),
}
"""Each screenshot of reports.md: the page's address after report.html, and what it shows (a selector whose
elements it frames; None: the window at the top)."""


def _take(url: str, shots: dict[str, tuple[str, str | None]], into: Path) -> None:
    with headless_chromium() as browser:
        for name, (fragment, selector) in shots.items():
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url + fragment)
            page.wait_for_load_state("load")
            if selector is None:
                page.screenshot(path=str(into / name))
                continue
            top, bottom = page.evaluate("""selector => {
                const rects = [...document.querySelectorAll(selector)].map(e => e.getBoundingClientRect());
                if (rects.length < selector.split(",").length) throw new Error("nothing matches " + selector);
                return [Math.min(...rects.map(r => r.top)) + scrollY, Math.max(...rects.map(r => r.bottom)) + scrollY];
            }""", selector)
            top -= 16
            page.screenshot(path=str(into / name), full_page=True,
                            clip={"x": 0, "y": max(top, 0), "width": 1400, "height": bottom + 16 - max(top, 0)})


def test_the_reports_screenshots_are_taken_from_a_real_sweep(tmp_path, shell_env):
    """reports.md's screenshots, taken again in headless chromium from a scripted sweep's report.html: into a
    temp dir, so a run of the suite leaves the checkout as it was; into docs/images with ``UPDATE_IMAGES=1``."""
    [command] = [c.text for c in readme.all_commands() if c.section == "reports.md > What report.html looks like"]
    sweep = tmp_path / "sweep"
    proc = _shell(f"{command} run.console=false hydra.sweep.dir={sweep}", tmp_path, shell_env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    into = IMAGES if os.environ.get("UPDATE_IMAGES") == "1" else tmp_path / "images"
    into.mkdir(exist_ok=True)
    started = time.time()
    _take((sweep / "report.html").as_uri(), SHOTS, into)
    for name in SHOTS:
        shot = into / name
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_mtime >= started - 1, name
        assert shot.stat().st_size > 20_000, f"{name} is {shot.stat().st_size} bytes"
        assert (IMAGES / name).read_bytes().startswith(b"\x89PNG"), f"docs/images/{name}: take it with UPDATE_IMAGES=1"
    shown = set(re.findall(r"\]\(images/([\w.-]+\.png)\)", readme.text("reports.md")))
    assert shown == set(SHOTS)
