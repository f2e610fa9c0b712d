"""The review page: a Starlette app, served by uvicorn on 127.0.0.1, where a person labels a run's answers.

``GET /`` is the queue; ``GET /task/<key>`` one transcript (final answer, rubric, the grader's verdict,
the revisions' diffs, the transcript with its tool calls and outputs) and its label form; ``POST
/task/<key>/label`` saves the label (``labels.json``, written whole each time) and shows the task again;
``GET /labels.json`` the labels. In blind mode the grader's verdict and the hidden checks stay hidden until
the task is labelled.

The page answers only requests addressed to the address it is bound to (a ``Host`` of ``127.0.0.1:PORT``
or ``localhost:PORT``), so a DNS-rebinding page cannot read it, and saves a label only from its own form:
the form carries a token drawn when the page starts, and a post from another origin is refused.
"""

from __future__ import annotations

import secrets
import signal
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from ..errors import UsageError
from .labels import PersonLabel, read_labels, save_label
from .pages import render
from .queue import Item, disagreement, items, queue

EXTRA = "pip install 'rubric_runner[review]'"


def _shown(value: bool | None, yes: str, no: str) -> str:
    return "-" if value is None else yes if value else no


def _guarded(app: Any, port: int) -> Any:
    """``app``, answering only requests whose ``Host`` is the bound address (anything else: 421)."""
    from starlette.datastructures import Headers
    from starlette.responses import PlainTextResponse

    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and Headers(scope=scope).get("host") not in hosts:
            refused = PlainTextResponse(f"refused: this page answers only at http://127.0.0.1:{port}/", status_code=421)
            await refused(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def create_app(run_dir: Path, port: int, blind: bool = False) -> Any:
    """The review app of the run in ``run_dir``, served on 127.0.0.1:``port``."""
    try:
        from starlette.applications import Starlette
        from starlette.responses import (
            HTMLResponse,
            JSONResponse,
            PlainTextResponse,
            RedirectResponse,
            Response,
        )
        from starlette.routing import Route
    except ImportError:
        raise UsageError("review", "the review page needs starlette and uvicorn", EXTRA) from None
    run_dir = Path(run_dir)
    read_labels(run_dir)  # a labels file it cannot read is refused now, not at the first page
    found = {item.key: item for item in items(run_dir)}
    if not found:
        raise UsageError("RUN_DIR", f"{run_dir} holds no saved transcript", "give the dir of a run that has run")
    token = secrets.token_urlsafe(32)
    origins = {f"http://127.0.0.1:{port}", f"http://localhost:{port}"}

    def name(item: Item) -> str:
        return item.record.task_id or item.key

    async def home(request: Any) -> Response:
        labels = read_labels(run_dir)
        rows = [{"key": item.key, "name": name(item),
                 "disagreement": "-" if blind and item.key not in labels else disagreement(item, labels.get(item.key)),
                 "verdict": "hidden" if blind and item.key not in labels else _shown(item.verdict, "satisfied", "rejected"),
                 "checked": "hidden" if blind and item.key not in labels else _shown(item.checked, "passed", "failed"),
                 "label": _shown(labels[item.key].satisfied, "satisfactory", "not satisfactory") if item.key in labels else "-"}
                for item in queue(list(found.values()), labels)]
        return HTMLResponse(render("queue.html", run=run_dir.name, items=rows, blind=blind,
                                   labelled=sum(item.key in labels for item in found.values())))

    def _item(request: Any) -> Item | None:
        return found.get(request.path_params["key"])

    async def task(request: Any) -> Response:
        item = _item(request)
        if item is None:
            return HTMLResponse("no such task", status_code=404)
        labels = read_labels(run_dir)
        label = labels.get(item.key)
        order = [i.key for i in queue(list(found.values()), labels)]
        after = order[order.index(item.key) + 1:]
        return HTMLResponse(render(
            "task.html", key=item.key, name=name(item), record=item.record, label=label, criteria=item.criteria,
            hidden=blind and label is None, verdict=item.record.status.value, token=token,
            checked=_shown(item.checked, "passed", "failed") if item.checked is not None else None,
            failures=item.record.verification.final.failures() if item.record.verification and item.record.verification.final else [],
            revisions=item.revisions(), messages=item.messages, next=next(iter(after), None)))

    async def label(request: Any) -> Response:
        item = _item(request)
        if item is None:
            return HTMLResponse("no such task", status_code=404)
        form = {k: v[-1] for k, v in parse_qs((await request.body()).decode("utf-8")).items()}
        origin = request.headers.get("origin")  # a browser's post says where its page came from
        if (origin is not None and origin not in origins) or not secrets.compare_digest(form.get("token", ""), token):
            return PlainTextResponse("refused: a label is saved only from this page's own form", status_code=403)
        satisfied = {"yes": True, "no": False}.get(form.get("satisfied", ""))
        criteria = {c: form[f"criterion-{i}"] == "pass" for i, c in enumerate(item.criteria) if form.get(f"criterion-{i}") in ("pass", "fail")}
        seen = not blind or item.key in read_labels(run_dir)
        save_label(run_dir, item.key, PersonLabel(satisfied, criteria, form.get("note", "").strip(), seen))
        return RedirectResponse(f"/task/{item.key}", status_code=303)

    async def labels_json(request: Any) -> Response:
        return JSONResponse({key: vars(value) for key, value in read_labels(run_dir).items()})

    return _guarded(Starlette(routes=[Route("/", home), Route("/labels.json", labels_json),
                                      Route("/task/{key:path}/label", label, methods=["POST"]),
                                      Route("/task/{key:path}", task)]), port)


def bound_socket(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (0: any free port), or a usage error naming the fix."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise UsageError("--port", f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", "give another --port, or --port 0 for any free one") from None
    sock.listen(128)  # from now on a browser's connection waits for the server rather than being refused
    return sock


def serve(run_dir: Path, port: int, blind: bool = False) -> None:
    """Serve the review page of ``run_dir`` on 127.0.0.1 until interrupted, printing its URL first."""
    try:
        import uvicorn
    except ImportError:
        raise UsageError("review", "the review page needs starlette and uvicorn", EXTRA) from None
    sock = bound_socket(port)
    try:
        app = create_app(run_dir, sock.getsockname()[1], blind)
    except BaseException:
        sock.close()
        raise
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # a Ctrl-C before uvicorn takes the signal (while its event loop is made) stops the server as one after
    previous = signal.signal(signal.SIGINT, lambda number, frame: setattr(server, "should_exit", True))
    print(f"review page: http://127.0.0.1:{sock.getsockname()[1]}/ (labels go to {Path(run_dir) / 'labels.json'}; Ctrl-C stops)", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGINT, previous)
        sock.close()
    if server.should_exit:  # stopped by Ctrl-C: the command line says so and exits 130
        raise KeyboardInterrupt
