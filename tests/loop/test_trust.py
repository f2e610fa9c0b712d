"""A run dir is data, not code: a tampered record's ``_target_``s, dotted callables and ``pkg://`` config dirs
run on no ``resume``, ``regrade`` or ``continue`` unless the user's own config names them or the user says
``--trust-run-dir``; ``report`` and ``compare`` never run them. Real ``python -m rubric_runner`` processes,
as root and as an ordinary user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.helpers import SCRIPTED_EVIDENCE, run_cli

import rubric_runner

EVIL = "from pathlib import Path\nPath(__file__).with_name('imported').write_text('x')\ndef hook(event):\n    pass\n"
VICTIM = "a file the user cares about\n"
COMMANDS = {"resume": ["resume"], "regrade": ["regrade"], "continue": ["continue"], "trusted resume": ["resume", "--trust-run-dir"]}


def _tampered(root: Path, config_dirs: list[str] | None = None) -> Path:
    """A finished scripted run in ``root/run`` whose record was edited to name code: a middleware whose
    ``_target_`` truncates ``root/victim.txt``, and an evaluation callback in ``root/evil.py`` (beside where
    the user works, so importable) that leaves ``root/imported`` when imported."""
    run_dir = root / "run"
    rubric_runner.run(["worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE], run_dir)
    (root / "victim.txt").write_text(VICTIM)
    (root / "evil.py").write_text(EVIL)
    result = json.loads((run_dir / "result.json").read_text())
    result["header"]["sources"]["overrides"] += [
        f"+grader.middleware=[{{_target_: builtins.open, file: {root / 'victim.txt'}, mode: w}}]",
        "grader.on_evaluation=[evil.hook]"]
    if config_dirs is not None:
        result["header"]["sources"]["config_dirs"] = config_dirs
    (run_dir / "result.json").write_text(json.dumps(result))
    return run_dir


def _untouched(root: Path) -> bool:
    return (root / "victim.txt").read_text() == VICTIM and not (root / "imported").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_tampered_run_dirs_code_runs_only_when_the_user_trusts_it(tmp_path, command):
    run_dir = _tampered(tmp_path)
    before = (run_dir / "result.json").read_bytes()
    message = ["say more"] if command == "continue" else []
    done = run_cli(*COMMANDS[command], str(run_dir), *message, cwd=tmp_path)
    if command == "trusted resume":  # as recorded: the middleware truncates the file, the callback imports
        assert (tmp_path / "victim.txt").read_text() == "" and (tmp_path / "imported").exists(), done.stderr
        return
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: RUN_DIR: {run_dir} would run code its record names and your own config does not: "
        "grader.middleware[0]._target_=builtins.open, grader.on_evaluation[0]=evil.hook (check the run dir, then add "
        "--trust-run-dir to run it; or give it yourself, as an override or in a --config-dir)"]
    assert _untouched(tmp_path)
    assert (run_dir / "result.json").read_bytes() == before and not (run_dir / "regrades").exists()


def test_a_recorded_package_config_dir_is_not_imported(tmp_path):
    run_dir = _tampered(tmp_path, config_dirs=["pkg://evil"])
    done = run_cli("regrade", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2 and "config dir=pkg://evil" in done.stderr, done.stderr
    assert _untouched(tmp_path)


def test_report_and_compare_of_a_tampered_run_dir_run_none_of_its_code(tmp_path):
    run_dir = _tampered(tmp_path)
    assert run_cli("report", str(run_dir), cwd=tmp_path).returncode == 0
    assert run_cli("compare", str(run_dir), str(run_dir), cwd=tmp_path).returncode == 0
    assert _untouched(tmp_path)


def test_code_of_the_users_own_config_dir_runs_when_the_user_gives_that_dir(tmp_path):
    (tmp_path / "mine" / "grader").mkdir(parents=True)
    (tmp_path / "mine" / "grader" / "capped.yaml").write_text(
        "defaults:\n  - scripted\n  - _self_\nmiddleware:\n"
        "  - {_target_: langchain.agents.middleware.ModelRetryMiddleware, max_retries: 1}\n")
    args = ["--config-dir", str(tmp_path / "mine"), "worker=scripted", "grader=capped", "run.console=false",
            SCRIPTED_EVIDENCE, f"hydra.run.dir={tmp_path / 'run'}"]
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    refused = run_cli("regrade", str(tmp_path / "run"), cwd=tmp_path)
    assert refused.returncode == 2 and "ModelRetryMiddleware" in refused.stderr, refused.stderr
    done = run_cli("regrade", "--config-dir", str(tmp_path / "mine"), str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_an_ordinary_users_files_are_safe_from_a_tampered_run_dir(request):
    """The same refusal as an unprivileged user (``nobody``), whose own file the record's middleware names."""
    if os.getuid() != 0:
        pytest.skip("pytest runs as an ordinary user: the tests above are the unprivileged run")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to run as another user")
    root = Path(tempfile.mkdtemp(prefix="rubric-trust-"))  # pytest's own temp dirs are root's alone
    request.addfinalizer(lambda: shutil.rmtree(root))
    root.chmod(0o755)
    run_dir = _tampered(root)
    for path in [root, *root.rglob("*")]:
        os.chown(path, 65534, 65534)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8", "RUBRIC_RUNNER_PLUGINS": os.environ["RUBRIC_RUNNER_PLUGINS"]}
    as_nobody = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "rubric_runner"]
    done = subprocess.run([*as_nobody, "resume", str(run_dir)], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "would run code its record names" in done.stderr, done.stderr
    assert _untouched(root)
    trusted = subprocess.run([*as_nobody, "resume", "--trust-run-dir", str(run_dir)], cwd=root, env=env, capture_output=True,
                             text=True, timeout=120)
    assert (root / "victim.txt").read_text() == "", trusted.stderr  # the user's own file, truncated by the code it trusted
