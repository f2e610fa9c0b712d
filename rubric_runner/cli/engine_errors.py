"""A launcher's failure in one line: the engine's own words (SLURM's ``sbatch: error: ...``, Ray's
connection or authentication error) and what to do about it."""

from __future__ import annotations

import os
import re
import socket
import sys

from ..errors import UsageError

FIXES = (
    ("sbatch: error", "check hydra.launcher.partition and the other sbatch settings of the launcher (`sinfo` lists "
                      "the partitions)"),
    ("no such file or directory: 'sbatch'", "run the sweep where SLURM's commands are, or use "
                                            "hydra/launcher=submitit_local"),
    ('detect "srun"', "run the sweep where SLURM's commands are, or use hydra/launcher=submitit_local"),
    ("token", "start the cluster and this shell with RAY_AUTH_MODE=token and the same RAY_AUTH_TOKEN_PATH "
              "(docs/clusters.md)"),
    ("authentication", "start the cluster and this shell with RAY_AUTH_MODE=token and the same RAY_AUTH_TOKEN_PATH "
                       "(docs/clusters.md)"),
    ("ray", "check hydra.launcher.ray.init.address and that the cluster is up (`ray status --address=HEAD:PORT`)"),
)
"""What to do, by a word of the engine's message (or of its error's module), first match wins."""
MESSAGE_CHARS = 400
RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")
"""A traceback's last line, as an engine quotes it in its own message (Ray's ``Failed to connect to GCS``)."""
CONNECT_SECONDS = 5.0


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from, outermost first."""
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def _words(exc: BaseException) -> str:
    """The engine's own message: sbatch's ``error:`` lines where there are any, else the last exception
    line of a traceback it quotes, else its first sentence (a first line that does not end one goes on
    with the second, as submitit's ``Job 17_1 ... with path ...`` / ``has not produced any output``)."""
    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("sbatch: error:")]
    raised = [line for line in lines if RAISED.match(line)]
    first = " ".join(lines[:1 if not lines or lines[0].endswith((".", ":", "!", "?", ")")) else 2])
    picked = "; ".join(dict.fromkeys(errors)) if errors else raised[-1] if raised else first or type(exc).__name__
    return picked if len(picked) <= MESSAGE_CHARS else picked[:MESSAGE_CHARS] + "..."


def _says(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}", text.lower()) is not None


def _fix(text: str) -> str | None:
    """What to do about an error whose message (and module) is ``text``; None when no word of FIXES is in it."""
    return next((todo for word, todo in FIXES if _says(word, text)), None)


def engine_failure(exc: BaseException, fix: bool = True) -> str:
    """``Ray: ConnectionError: Could not find any running Ray instance... (check ...)``: the engine's
    message (of the error in ``exc``'s chain that says FIXES' first word said by any, else of ``exc``), and
    with ``fix`` what to do (or how to see the whole traceback)."""
    chain = _chain(exc)
    named = next((e for word, _ in FIXES for e in chain if _says(word, f"{e} {type(e).__module__}")), chain[0])
    engine = type(named).__module__.split(".")[0]
    words = _words(named)
    line = words if RAISED.match(words) else f"{type(named).__name__}: {words}"
    if engine in ("ray", "submitit"):
        line = f"{'Ray' if engine == 'ray' else 'submitit'}: {line}"
    if not fix:
        return line
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        import traceback

        traceback.print_exception(exc)
    todo = _fix(f"{line} {type(named).__module__}") or "HYDRA_FULL_ERROR=1 shows the whole traceback"
    return f"{line} ({todo})"


def check_ray_address(address: object) -> None:
    """A UsageError naming the address when nothing answers there (Ray itself would retry for minutes);
    nothing to check for ``auto``, none (a local instance) or another form."""
    text = str(address or "")
    match = re.fullmatch(r"(?:ray://)?\[?([\w.:-]+?)\]?:(\d+)", text)
    if match is None:
        return
    try:
        socket.create_connection((match.group(1), int(match.group(2))), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise UsageError("hydra.launcher.ray.init.address", f"Ray: nothing answers at {text}: {exc.strerror or exc}",
                         "start the cluster (`ray start --head`) or give its address (`ray status` on a node shows it)") from None


def engine_took_jobs() -> bool:
    """Whether a cluster engine in this process accepted jobs of the sweep (SLURM's queue watcher was
    given some, or Ray was connected): a failure after that is the jobs', not a refused launch."""
    slurm = sys.modules.get("submitit.slurm.slurm")
    if slurm is not None and getattr(slurm.SlurmJob.watcher, "_registered", None):
        return True
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())
