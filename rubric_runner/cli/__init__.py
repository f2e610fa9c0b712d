"""Command line: ``rubric-runner [COMMAND ...]`` (or ``python -m rubric_runner``).

A first argument naming a command runs that command (argparse; plugins add commands through the
``register_commands`` hook); anything else goes to Hydra untouched, as the overrides of a run or
a sweep (``cli.hydra_app``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..errors import UsageError, place_error
from ..paths import CONF_DIR
from ..records import ExitCode
from .arguments import run_dir_argument, runs_dir_argument

HELP = """rubric_runner: run deepagents' RubricMiddleware loop from config.

usage: python -m rubric_runner [GROUP=OPTION ...] [KEY=VALUE ...]   (or: rubric-runner ...)
       python -m rubric_runner -m worker=sonnet,gpt rubric=code,haiku   (a sweep)
       rubric-runner COMMAND ...                                        ({commands}; COMMAND --help for each)

config groups (conf/):
{groups}

  --cfg job     print the composed config without running
  --version     print rubric_runner's version
  --hydra-help  Hydra's own options
exit codes: 0 satisfied, 1 unsatisfied, 2 bad config or usage, 3 grader or runtime error, 4 below
            sweep.fail_under (or report --fail-under), 5 stopped by a budget (resume to finish), 130 interrupted
"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line on stderr, naming the fix, and exits 2; it keeps its
    commands (``add_commands``) by name."""

    commands: dict[str, ArgumentParser]

    def add_commands(self) -> Any:
        """The subparsers its commands are added to (``add_parser``)."""
        subparsers = self.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
        self.commands = subparsers.choices
        return subparsers

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument ") and message.endswith(")"):  # names the argument and the fix already
            line = message.removeprefix("argument ")
        else:
            line = f"{self.prog}: {message} (`{self.prog} --help` shows the usage)"
        print(f"error: {line}", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def _add_overrides(parser: ArgumentParser, meaning: str) -> None:
    """The optional overrides that end a command line (``-m`` and ``~key`` among them)."""
    action = parser.add_argument("overrides", metavar="OVERRIDE", nargs=argparse.REMAINDER, help=f"{meaning} (optional)")
    action.required = False  # argparse counts a REMAINDER as required when it names what is missing


def _add_trust(parser: ArgumentParser) -> None:
    """``--trust-run-dir``: a run dir is data unless the user says otherwise."""
    parser.add_argument("--trust-run-dir", action="store_true", help="run the code the run dir's record names "
                        "(_target_s, dotted callables, tools by import path) where your own config does not name it")


def _add_builtin_commands(subparsers: Any) -> None:
    resume = subparsers.add_parser("resume", usage="%(prog)s [-h] [--config-dir DIR] [--trust-run-dir] RUN_DIR [OVERRIDE ...]", help="continue a run from its checkpoints, with its own overrides",
                                   description="Continue the run in RUN_DIR from its checkpoints, with the overrides it ran with.")
    resume.add_argument("--config-dir", metavar="DIR", help="a config dir the run's config needs, if it did not record it")
    _add_trust(resume)
    resume.add_argument("run_dir", metavar="RUN_DIR", type=run_dir_argument, help="the run dir")
    _add_overrides(resume, "overrides that leave the tasks as they were, e.g. run.concurrency=2")
    resume.set_defaults(handler="rubric_runner.cli.launches:resume")

    follow = subparsers.add_parser(
        "continue", usage="%(prog)s [-h] [--task ID] [--repeat K] [--config-dir DIR] [--trust-run-dir] RUN_DIR MESSAGE [OVERRIDE ...]", help="continue a finished run's thread with a new message (a follow-up turn)",
        description="Send MESSAGE on the thread of the run in RUN_DIR as a follow-up turn, graded against the same "
        "rubric (carried over) or a new one (rubric.text=...); its record goes to RUN_DIR/tasks/<id>-r<k>/turns/<n>/.")
    follow.add_argument("--task", metavar="ID", help="the task to continue (a run of one task: its own)")
    follow.add_argument("--repeat", metavar="K", type=int, default=0, help="its repeat (default 0)")
    follow.add_argument("--config-dir", metavar="DIR", help="a config dir the run's config needs, if it did not record it")
    _add_trust(follow)
    follow.add_argument("run_dir", metavar="RUN_DIR", type=run_dir_argument, help="the run dir")
    follow.add_argument("message", metavar="MESSAGE", help="the follow-up message for the worker")
    _add_overrides(follow, "more overrides, e.g. rubric.text='- ...' or grader=gpt")
    follow.set_defaults(handler="rubric_runner.cli.launches:continue_run")

    regrade = subparsers.add_parser("regrade", usage="%(prog)s [-h] [-m] [--repeats N] [--min-agreement RATE] [--config-dir DIR] [--trust-run-dir] RUN_DIR [OVERRIDE ...]", help="grade a run's saved transcripts again, with another grader or rubric",
                                    description="Grade the transcripts saved in RUN_DIR (a run dir, or a sweep dir: each of its "
                                    "runs) again, one grading pass each, and write the new records to RUN_DIR/regrades/<time>/. "
                                    "With -m, regrade with each combination of the overrides' values (grader=haiku,gpt), one "
                                    "numbered dir each, and rank the graders by their errors against hidden verification.")
    regrade.add_argument("-m", "--multirun", action="store_true", help="regrade with each value of a list (grader=haiku,gpt)")
    regrade.add_argument("--config-dir", metavar="DIR", help="a config dir the graders' config needs (a preset of yours)")
    regrade.add_argument("--repeats", type=int, default=1, metavar="N", help="grade each transcript N times, and report each grader's agreement with itself")
    regrade.add_argument("--min-agreement", type=float, metavar="RATE", help="exit 4 when a grader agrees with the labels on fewer than RATE (0..1) of the verdicts (a golden dir's default: its golden.json)")
    _add_trust(regrade)
    regrade.add_argument("run_dir", metavar="RUN_DIR", type=runs_dir_argument, help="the run dir or sweep dir")
    _add_overrides(regrade, "overrides for the grader or rubric, e.g. grader=gpt or rubric.text='- ...'")
    regrade.set_defaults(handler="rubric_runner.cli.launches:regrade")

    report = subparsers.add_parser("report", help="write the summary files and reports of a sweep or run dir",
                                   description="Write summary.jsonl, summary.csv, report.md and report.html into a sweep or run "
                                   "dir, from its runs' result.json files.")
    report.add_argument("dir", type=Path, help="a sweep dir (outputs/multirun/DATE/TIME), a run dir, or any dir above them")
    report.add_argument("--fail-under", type=float, metavar="RATE", help="exit 4 when the fraction of satisfied runs is below RATE (0..1)")
    report.add_argument("--prices", type=Path, metavar="FILE", help="price table (default conf/prices.yaml)")
    report.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML: one test case per task x repeat")
    report.set_defaults(handler="rubric_runner.report.command:main", parser=report)

    tools = subparsers.add_parser("tools", help="list every tool the plugins register",
                                  description="Lists every tool the loaded plugins register: name, plugin, package, description, settings.")
    tools.set_defaults(handler="rubric_runner.cli.listing:tools")
    plugins = subparsers.add_parser("plugins", help="list the loaded plugins and any that failed",
                                    description="Lists the loaded plugins with their packages and versions, and the plugins that failed to load.")
    plugins.set_defaults(handler="rubric_runner.cli.listing:plugins")
    doctor = subparsers.add_parser("doctor", help="say which sandbox isolation backends work here",
                                   description="Runs a trivial test through each sandbox isolation backend and says which work "
                                   "here and which one sandbox.isolation=auto uses; exits 1 when auto would refuse to run code.")
    doctor.set_defaults(handler="rubric_runner.cli.listing:doctor")
    from .compare import add_parser as add_compare

    add_compare(subparsers)
    from .policies import add_parser as add_policies

    add_policies(subparsers)
    from .review import add_parsers as add_review

    add_review(subparsers)


BUILTIN_COMMANDS = ("compare", "continue", "doctor", "golden", "plugins", "policies", "regrade", "report", "resume", "review", "tools")


def build_parser(with_plugins: bool) -> ArgumentParser:
    """The command parser: built-in commands, and with ``with_plugins`` those the plugins add."""
    parser = ArgumentParser(prog="rubric-runner", add_help=False)
    subparsers = parser.add_commands()
    _add_builtin_commands(subparsers)
    if with_plugins:
        from ..plugins.manager import Plugins

        Plugins.load().register_commands(subparsers)
    return parser


def commands(parser: ArgumentParser) -> list[str]:
    """The names of the parser's commands."""
    return sorted(parser.commands)


def _handler(handler: str | Callable[[argparse.Namespace], int | None]) -> Callable[[argparse.Namespace], int | None]:
    if callable(handler):
        return handler
    module, _, function = handler.partition(":")
    return getattr(importlib.import_module(module), function)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; a usage error, or a path it may not read or write, is one line and exit 2."""
    try:
        return int(_handler(args.handler)(args) or 0)
    except OSError as exc:
        error = place_error(exc, args.command)
        if error is None:
            raise
    except UsageError as exc:
        error = exc
    print(f"error: {error}", file=sys.stderr)
    return ExitCode.USAGE


def config_groups() -> dict[str, list[str]]:
    """Each selectable config group under conf/ and its options (read from the files)."""
    groups = {}
    for folder in sorted(p for p in CONF_DIR.rglob("*") if p.is_dir()):
        name = folder.relative_to(CONF_DIR).as_posix()
        options = sorted(f.stem for f in folder.glob("*.yaml"))
        if options and not name.startswith(("hydra", "model")):
            groups[name] = options
    return groups


def print_help() -> None:
    """Usage, groups and options; read from conf/ directly, so it prints at once."""
    groups = "\n".join(f"  {name:<15} {', '.join(options)}" for name, options in config_groups().items())
    print(HELP.format(groups=groups, commands=", ".join(BUILTIN_COMMANDS)))


def _is_command_word(arg: str) -> bool:
    """Whether ``arg`` can only be a command: not a flag and not an override (``KEY=VALUE``, ``~KEY``)."""
    return not arg.startswith(("-", "~", "+")) and "=" not in arg


def run_command(argv: list[str]) -> int:
    """Run ``rubric-runner ARGV`` and return its exit code (argparse's exits raise SystemExit)."""
    if argv and _is_command_word(argv[0]):
        parser = build_parser(with_plugins=argv[0] not in BUILTIN_COMMANDS)
        names = commands(parser)
        if argv[0] not in names:
            print(f"error: {argv[0]}: neither a command nor an override (commands: {', '.join(names)}; "
                  "an override looks like KEY=VALUE, e.g. rubric=code)", file=sys.stderr)
            return ExitCode.USAGE
        args, extra = parser.parse_known_args(argv)
        if extra:
            parser.commands[args.command].error(f"unexpected arguments {' '.join(extra)}")
        return _run(args)
    if "--help" in argv or "-h" in argv:
        print_help()
        return ExitCode.SATISFIED
    if "--version" in argv:  # rubric_runner's, not Hydra's (which its own parser would print)
        from .. import __version__

        print(f"rubric_runner {__version__}")
        return ExitCode.SATISFIED
    from .hydra_app import run_hydra

    return run_hydra(argv)


def main() -> None:
    """``rubric-runner [COMMAND ...]``: a command, or else Hydra overrides for a run or a sweep. A run's exit
    code is its record's, whoever stopped reading its output."""
    from ..observe.console import write_line

    try:
        code = run_command(sys.argv[1:])
    except BrokenPipeError:  # a listing's reader went away (`rubric-runner tools | head -1`): nothing left to say
        code = ExitCode.SATISFIED
    except KeyboardInterrupt:  # Ctrl-C while starting up, before a run held its dir (a run records its own)
        print("interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    write_line("", sys.stdout, end="")  # flushed now, so no closed pipe can fail the interpreter's exit
    exit_within(EXIT_GRACE_SECONDS, code)


EXIT_GRACE_SECONDS = 30.0
"""How long the interpreter's exit may take once the work is recorded: Ray's atexit disconnect can hang
for good, as can a thread a tool or library left running."""


def exit_within(seconds: float, code: int) -> NoReturn:
    """Exit with ``code``; if the interpreter's exit (threads still running, atexit handlers) then takes over
    ``seconds``, say so on stderr and end the process with the same code. A caller in the same process
    that catches the SystemExit goes on as before."""
    from ..compat.python import at_exit_start
    from ..observe.console import write_line

    def force() -> None:
        write_line(f"exit: the interpreter's exit took over {seconds:g} s (a thread or an atexit handler did not "
                   f"finish); exiting with {int(code)}", sys.stderr)
        os._exit(int(code))

    def arm() -> None:
        timer = threading.Timer(seconds, force)
        timer.daemon = True
        timer.start()

    at_exit_start(arm)
    sys.exit(code)
