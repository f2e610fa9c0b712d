"""Where the test suite's time goes: the CPU seconds of each test module, in the test's own process and in the
subprocesses it waited for, beside the machine's CPU and wall time over the whole run.

    .venv/bin/python benchmarks/suite_cpu.py             # the whole suite, writes benchmarks/results/suite-cpu.json
    .venv/bin/python benchmarks/suite_cpu.py tests/loop  # any pytest arguments

On two cores a suite that needs C CPU seconds cannot end before C / 2 s. What no test waited for (daemons a
cluster fixture started, processes a sandbox left to init, the workers' start and collection) is the machine's
CPU less the tests' sum.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "suite-cpu.json"
LOG_ENV = "SUITE_CPU_LOG"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Loaded into each pytest worker (``-p benchmarks.suite_cpu``): one line per test with its CPU seconds."""
    before, started = os.times(), time.monotonic()
    yield
    after = os.times()
    line = {"test": item.nodeid, "wall": time.monotonic() - started,
            "own": after.user - before.user + after.system - before.system,
            "subprocesses": after.children_user - before.children_user + after.children_system - before.children_system}
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def _machine_cpu() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, from /proc/stat."""
    user, nice, system, idle, iowait, irq, softirq, *_ = map(int, Path("/proc/stat").read_text().split("\n")[0].split()[1:])
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, (idle + iowait) / tick


def _by_module(lines: list[dict]) -> list[dict]:
    modules: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in lines:
        module = modules[line["test"].split("::")[0]]
        module.update({"tests": 1, "wall_s": line["wall"], "own_s": line["own"], "subprocesses_s": line["subprocesses"]})
    rows = [{"module": name, "cpu_s": round(c["own_s"] + c["subprocesses_s"], 1), "own_s": round(c["own_s"], 1),
             "subprocesses_s": round(c["subprocesses_s"], 1), "test_time_s": round(c["wall_s"], 1), "tests": c["tests"]}
            for name, c in modules.items()]
    return sorted(rows, key=lambda row: -row["cpu_s"])


def main(args: list[str]) -> int:
    log = RESULT.with_suffix(".jsonl")
    log.unlink(missing_ok=True)
    busy, idle, started = *_machine_cpu(), time.monotonic()
    # the probe is imported from the repository root (``python -m`` puts it on the path), not the tests' path
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.suite_cpu", *args], cwd=ROOT,
                          env={**os.environ, LOG_ENV: str(log)})
    busy_after, idle_after = _machine_cpu()
    if not log.is_file():  # no test ran: the saved figures stay as they are
        print(f"no test ran (pytest exited {proc.returncode}); {RESULT} is left as it was", file=sys.stderr)
        return proc.returncode or 1
    lines = [json.loads(text) for text in log.read_text(encoding="utf-8").splitlines()]
    log.unlink()
    modules = _by_module(lines)
    tests_cpu = sum(row["cpu_s"] for row in modules)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "pytest_args": args, "exit_code": proc.returncode, "cpus": os.cpu_count(),
        "wall_s": round(time.monotonic() - started, 1), "machine_cpu_s": round(busy_after - busy, 1),
        "machine_idle_s": round(idle_after - idle, 1), "tests": len(lines), "tests_cpu_s": round(tests_cpu, 1),
        "modules": modules,
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wall {result['wall_s']} s, machine CPU {result['machine_cpu_s']} s (idle {result['machine_idle_s']} s), "
          f"{len(lines)} tests' CPU {result['tests_cpu_s']} s")
    print(f"{'cpu s':>7} {'own':>6} {'subproc':>7} {'test s':>7}  module")
    for row in modules[:25]:
        print(f"{row['cpu_s']:7.1f} {row['own_s']:6.1f} {row['subprocesses_s']:7.1f} {row['test_time_s']:7.1f}  {row['module']}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
