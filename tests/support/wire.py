"""Loopback HTTP servers speaking OpenAI chat completions and Anthropic messages, replying from a script.

A server answers each request with the next scripted turn and records every request it saw::

    with FakeServer("openai", [text("draft"), verdict("satisfied", ("c", True))]) as server:
        ... worker.base_url=server.base_url ...
    assert server.remaining == 0 and server.requests[1].json["tool_choice"] == "required"

Turns: ``text``, ``call`` (tool calls; arguments given as a string go as they are, JSON or not),
``verdict`` (a ``GraderResponse``, sent as the tool call or as JSON content, whichever the request asked
for), ``refusal`` (OpenAI's ``refusal`` field, Anthropic's ``stop_reason: refusal``), ``fault`` (an HTTP
error status), ``hang`` (no reply until the client gives up), ``raw`` (any body), ``cut`` (a body shorter
than its Content-Length) and ``unfinished`` (a stream that ends before its finish).
``FakeServer(..., refuse=True)`` gives an address where connections are refused.

A request that asks to stream (``stream: true``) is answered with the turn as server-sent events, as each
protocol streams: OpenAI's ``chat.completion.chunk`` lines, the last with ``finish_reason``, then
``[DONE]``; Anthropic's ``message_start`` ... ``message_delta`` (with ``stop_reason``), ``message_stop``.

An OpenAI server's ``behaviour`` is how it treats structured-output requests, as measured on real
servers: ``FULL`` (every shape works, as vLLM), ``LLAMA_CPP`` (llama-cpp-python 0.3 with the model's
own chat template) and ``LLAMA_CPP_FUNCTIONS`` (the same with ``--chat_format chatml-function-calling``);
``NO_STRUCTURE`` honours none.
It answers ``auto``'s probes itself (no turn is used; they are kept in ``probes``), from ``probe_turns``
while any are left, and lists its models at ``/v1/models`` (``model_overrides`` adds the model it points
a role at).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rubric_runner.compat.deepagents import GRADER_TOOL
from rubric_runner.grader.probe import PROBE_NAME, PROBE_PROMPT

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-proj-FAKEopenaiKEY0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-api03-FAKEanthropicKEY0123456789",
}
"""Fake credentials for the environment: the clients send them, the servers can echo them."""
DEFAULT_MODELS = {"openai": "local-model", "anthropic": "claude-haiku-4-5"}


@dataclass(frozen=True)
class Behaviour:
    """How a server treats the request shapes of the structured-output strategies."""

    required: str = "honour"  # tool_choice "required": "honour", "ignore" (answer as if auto) or "reject" (a 500)
    json_schema: bool = True  # response_format json_schema; False: 500, as llama-cpp-python's request model refuses it
    text_tool_calls: bool = False  # a tool call the model chooses itself comes back as text, unparsed
    null_content: bool = True  # False: a 500 for an assistant message with content null (one that only calls tools)
    named: bool = True  # a tool choice naming one tool forces that call (False: answered as if auto)
    json_object: bool = True  # response_format json_object makes the reply JSON (False: ignored)


FULL = Behaviour()
LLAMA_CPP = Behaviour(required="ignore", json_schema=False, text_tool_calls=True, null_content=False)
LLAMA_CPP_FUNCTIONS = Behaviour(required="reject", json_schema=False, null_content=False)
NO_STRUCTURE = Behaviour(required="ignore", json_schema=False, text_tool_calls=True, named=False, json_object=False)
"""A server that takes every request shape and honours none of them."""
JSON_SCHEMA_REFUSED = {"error": {"message": (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should "
    "be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n  File \"llama_cpp/server/app.py\", line 1, in ..."
), "type": "internal_server_error", "param": None, "code": None}}
REQUIRED_REFUSED = {"error": {"message": "", "type": "internal_server_error", "param": None, "code": None}}
NULL_CONTENT_REFUSED = {"error": {"message": (
    "6 validation errors:\n  {'type': 'string_type', 'loc': ('body', 'messages', 2, 'ChatCompletionRequestAssistantMessage', "
    "'content'), 'msg': 'Input should be a valid string', 'input': None}"
), "type": "internal_server_error", "param": None, "code": None}}
"""llama-cpp-python 0.3.36's 500 bodies for ``response_format: json_schema``, (chatml-function-calling)
for ``tool_choice: required``, and for an assistant message whose content is null."""


@dataclass
class Turn:
    """One scripted reply."""

    content: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    hang: float = 0.0
    cut: bool = False
    refusal: str | None = None
    unfinished: bool = False


def text(content: str) -> Turn:
    """A plain assistant message."""
    return Turn(content=content)


def call(name: str, arguments: str | None = None, **args: Any) -> Turn:
    """An assistant message calling one tool with ``args``, or with the ``arguments`` text as it is."""
    return Turn(calls=[(name, args if arguments is None else arguments)])


def refusal(said: str) -> Turn:
    """The model declines: OpenAI's ``refusal`` (no content), Anthropic's ``stop_reason: refusal``."""
    return Turn(refusal=said)


def unfinished(content: str) -> Turn:
    """Stream ``content``, then end the stream without its finish (OpenAI: no ``finish_reason``, no
    ``[DONE]``; Anthropic: no ``message_delta``, no ``message_stop``), closing the connection cleanly."""
    return Turn(content=content, unfinished=True)


def verdict(result: str, *criteria: tuple[str, bool], explanation: str | None = "graded") -> Turn:
    """A ``GraderResponse``; a failing criterion gets the gap ``fix <name>``; ``explanation=None`` omits it."""
    items = [{"name": name, "passed": True} if ok else {"name": name, "passed": False, "gap": f"fix {name}"}
             for name, ok in criteria]
    fields = {"result": result, "explanation": explanation, "criteria": items}
    return Turn(verdict={key: value for key, value in fields.items() if value is not None})


def fault(status: int, message: str = "simulated fault", retry_after: str | None = "0.01") -> Turn:
    """An HTTP error in the protocol's error shape; ``retry_after`` keeps client back-off short."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Turn(status=status, headers=headers, content=message)


def hang(seconds: float) -> Turn:
    """Hold the request open without replying (a client timeout shorter than this gives up)."""
    return Turn(hang=seconds)


def raw(body: bytes, status: int = 200, content_type: str = "application/json") -> Turn:
    """Reply with exactly ``body``."""
    return Turn(status=status, body=body, headers={"content-type": content_type})


def cut() -> Turn:
    """Announce a full body, send half of it, then close the connection."""
    return Turn(cut=True)


@dataclass
class Request:
    """What the server received."""

    path: str
    headers: dict[str, str]
    json: Any

    @property
    def key(self) -> str:
        """The API key the client sent (``x-api-key`` or a bearer token)."""
        return self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix("Bearer ")


class FakeServer:
    """A scripted provider on 127.0.0.1; ``protocol`` is ``"openai"`` or ``"anthropic"``."""

    def __init__(self, protocol: str, turns: list[Turn] | None = None, echo_key: bool = False, refuse: bool = False,
                 behaviour: Behaviour = FULL, probe_turns: list[Turn] | None = None):
        self.protocol = protocol
        self.turns = list(turns or [])
        self.probe_turns = list(probe_turns or [])
        self.behaviour = behaviour
        self.models = {DEFAULT_MODELS[protocol]}
        self.probes: list[Request] = []
        self.echo_key = echo_key  # error bodies quote the API key, as some proxies do
        self.refuse = refuse  # stop listening at once: connections to base_url are refused
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True

    @property
    def base_url(self) -> str:
        """The ``base_url`` a client of this protocol takes."""
        root = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        return f"{root}/v1" if self.protocol == "openai" else root

    @property
    def remaining(self) -> int:
        """Turns not yet used."""
        return len(self.turns)

    def __enter__(self) -> FakeServer:
        if self.refuse:
            self._httpd.server_close()
        else:
            threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if not self.refuse:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, request: Request) -> Turn:
        self._record(request)
        with self._lock:
            if not self.turns:
                return Turn(status=500, content="fake server: no scripted turn left", headers={"x-should-retry": "false"})
            return self.turns.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/v1/models":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                return self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in sorted(server.models)]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if self.path != PATHS[server.protocol]:
                    server._record(request)
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                probe = _is_probe(request.json)
                if probe and server.probe_turns:
                    server.probes.append(request)
                    return self._answer(server.probe_turns.pop(0), request)
                refused = server._refused(request)
                if probe or refused is not None:
                    server.probes.append(request) if probe else server._record(request)
                    return self._send(500, refused) if refused is not None else self._send(200, server._probe_reply(request.json))
                return self._answer(server._next(request), request)

            def _answer(self, turn: Turn, request: Request) -> None:
                if turn.hang:
                    server._stop.wait(turn.hang)
                    self.close_connection = True
                    return None
                if turn.cut:
                    return self._cut()
                if turn.body is not None:
                    return self._send(turn.status, turn.body, turn.headers)
                if turn.status != 200:
                    return self._send(turn.status, server._error(turn, request), turn.headers)
                if (request.json or {}).get("stream"):
                    return self._stream(server._events(turn, request))
                return self._send(200, server._reply(turn, request), turn.headers)

            def _stream(self, events: list[Any]) -> None:
                """Server-sent events, the body ended by closing the connection."""
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event in events:
                    name = f"event: {event['type']}\n" if isinstance(event, dict) and server.protocol == "anthropic" else ""
                    data = event if isinstance(event, str) else json.dumps(event)
                    self.wfile.write(f"{name}data: {data}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                headers = {"content-type": "application/json", **(headers or {})}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            def _cut(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "400")
                self.end_headers()
                self.wfile.write(b'{"id": "cut", "choi')
                self.close_connection = True

        return Handler

    def _refused(self, request: Request) -> Any:
        """The 500 body this server's behaviour gives for the request's shape, or None."""
        if self.protocol != "openai":
            return None
        body = request.json or {}
        if (body.get("response_format") or {}).get("type") == "json_schema" and not self.behaviour.json_schema:
            return JSON_SCHEMA_REFUSED
        if body.get("tool_choice") == "required" and self.behaviour.required == "reject":
            return REQUIRED_REFUSED
        if not self.behaviour.null_content and any(
            m.get("role") == "assistant" and m.get("content") is None for m in body.get("messages") or []
        ):
            return NULL_CONTENT_REFUSED
        return None

    def _probe_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        forced = _forced_name(body, self.behaviour)
        turn = Turn(calls=[(PROBE_NAME, {"ok": True})]) if forced else Turn(content="ok")
        if body.get("response_format") and (self.behaviour.json_object or body["response_format"]["type"] != "json_object"):
            turn = Turn(content=json.dumps({"ok": True}))
        return self._reply(turn, Request(PATHS[self.protocol], {}, body))

    def _error(self, turn: Turn, request: Request) -> dict[str, Any]:
        message = turn.content
        if self.echo_key:
            message = f"{message}: invalid key {request.key}"
        if self.protocol == "anthropic":
            return {"type": "error", "error": {"type": "api_error", "message": message}}
        return {"error": {"message": message, "type": "server_error", "code": turn.status}}

    def _reply(self, turn: Turn, request: Request) -> dict[str, Any]:
        body = request.json or {}
        content, calls = turn.content, list(turn.calls)
        if turn.verdict is not None:
            if _wants_tool(body):
                calls.append((GRADER_TOOL, turn.verdict))
            else:
                content = json.dumps(turn.verdict)
        forced = _forced_name(body, self.behaviour) if self.protocol == "openai" else None
        if forced not in (None, True) and [name for name, _ in calls] != [forced] and turn.refusal is None:
            content, calls = f"fake server: the scripted turn does not fit tool_choice {forced!r}: {turn}", []
        if forced is None and calls and self.behaviour.text_tool_calls and self.protocol == "openai":
            content = "\n".join(f"```json\n{json.dumps({'name': name, 'arguments': args}, indent=2)}\n```" for name, args in calls)
            calls = []
        n = next(self._ids)
        usage = (11, 7)
        if self.protocol == "anthropic":
            blocks = [{"type": "text", "text": content}] if content else []
            blocks += [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args}
                       for i, (name, args) in enumerate(calls)]
            if turn.refusal is not None:
                blocks, stop = [{"type": "text", "text": turn.refusal}], "refusal"
            else:
                stop = "tool_use" if calls else "end_turn"
            return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model"),
                    "content": blocks, "stop_reason": stop, "stop_sequence": None,
                    "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if turn.refusal is not None:
            message["refusal"] = turn.refusal
        if calls:
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": _arguments(args)}}
                for i, (name, args) in enumerate(calls)
            ]
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}


    def _events(self, turn: Turn, request: Request) -> list[Any]:
        """The turn's reply as its protocol's stream events; an ``unfinished`` turn stops after its text."""
        reply = self._reply(turn, request)
        if self.protocol == "anthropic":
            return _anthropic_events(reply, turn.unfinished)
        return _openai_events(reply, turn.unfinished, bool(((request.json or {}).get("stream_options") or {}).get("include_usage")))


def _arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _halves(content: str) -> list[str]:
    return [part for part in (content[: len(content) // 2], content[len(content) // 2:]) if part]


def _openai_events(reply: dict[str, Any], unfinished: bool, usage: bool) -> list[Any]:
    """A chat completion as ``chat.completion.chunk`` events."""
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": reply["id"], "object": "chat.completion.chunk", "created": 0, "model": reply["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": part}) for part in _halves(message.get("content") or "")]
    if message.get("refusal"):
        events.append(chunk({"refusal": message["refusal"]}))
    for i, tool_call in enumerate(message.get("tool_calls") or []):
        function = tool_call["function"]
        events.append(chunk({"tool_calls": [{"index": i, "id": tool_call["id"], "type": "function",
                                             "function": {"name": function["name"], "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}) for part in _halves(function["arguments"])]
    if unfinished:
        return events
    events.append(chunk({}, choice["finish_reason"]))
    if usage:
        events.append({**chunk({}), "choices": [], "usage": reply["usage"]})
    return [*events, "[DONE]"]


def _anthropic_events(reply: dict[str, Any], unfinished: bool) -> list[Any]:
    """A message as Anthropic's stream events."""
    usage = reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 0}}
    events: list[Any] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(reply["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            events += [{"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": part}}
                       for part in _halves(block["text"])]
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
            events += [{"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": part}}
                       for part in _halves(_arguments(block["input"]))]
        if unfinished:
            return events
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": usage["output_tokens"]}})
    return [*events, {"type": "message_stop"}]


def _is_probe(body: Any) -> bool:
    messages = (body or {}).get("messages") or []
    return len(messages) == 1 and messages[0].get("content") == PROBE_PROMPT


def _forced_name(body: dict[str, Any], behaviour: Behaviour) -> str | bool | None:
    """The tool a request forces by name; True for any tool (``required`` honoured); None for the model's choice."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and behaviour.named:
        return choice["function"]["name"]
    if choice == "required" and behaviour.required == "honour":
        return True
    return None


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {(tool.get("function") or tool).get("name") for tool in body.get("tools") or []}


def _wants_tool(body: dict[str, Any]) -> bool:
    """Whether the request offers the ``GraderResponse`` tool and asks for no native JSON output."""
    native = body.get("response_format") or (body.get("output_config") or {}).get("format")
    return GRADER_TOOL in _tool_names(body) and not native


def tool_results(request: Request) -> list[str]:
    """The tool results a request carries back to the model, as text."""
    found = []
    for message in request.json.get("messages") or []:
        if message.get("role") == "tool":
            found.append(message["content"])
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                found.append(content if isinstance(content, str) else "".join(part.get("text", "") for part in content))
    return found


def offers_tool(request: Request, name: str) -> bool:
    """Whether ``request`` offered the model a tool called ``name``."""
    return name in _tool_names(request.json)


def model_overrides(role: str, server: FakeServer, model: str | None = None, **settings: Any) -> list[str]:
    """Overrides pointing ``role`` (``worker`` or ``grader``) at ``server`` (which then lists ``model``),
    plus ``role.KEY=VALUE`` settings."""
    model = model or DEFAULT_MODELS[server.protocol]
    server.models.add(model)
    pinned = [f"{role}.model={server.protocol}:{model}", f"{role}.base_url={server.base_url}"]
    return pinned + [f"{role}.{key}={value}" for key, value in settings.items()]
