"""The scripted model: what every wire shares (turn, tokens, pacing, generation, billing), and the OpenAI wires,
Chat Completions and Responses, streamed and not (Anthropic and Gemini: anthropic_api.py, gemini_api.py).

The scenario decides the answer; the request only decides which turn (by counting the tool results
it already carries), and, under the scenario's model rule (harness/model_rule.py), whether a result that reads as
interrupted or as an error makes the model ask for the same call again first. One token = one delta; each is
stamped in the ledger as it is generated. What a
stream still generates after its client went away is the run's billing profile (harness/billing.py); a
non-streaming answer is generated in full.

Agents that keep tool calls as text (smolagents' ToolCallingAgent) are scripted too: a Chat Completions
request with no tool message is counted by the run's call ids it echoes in its text, and a text turn asked
with `tool_choice: "required"` comes as a call of the agent's one answer tool, token for token the text.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from harness.clock import sleep_until_ns
from harness.model_rule import ToolResult, reads_as_failed
from harness.scenario import Fault, Scenario, Turn
from harness.tools.catalogue import TOOL_NAMES
from harness.vocabulary import Event
from harness.world import faults
from harness.world.asgi import Connection
from harness.world.ledger import Run

WORDS = ("the", "quarter", "closed", "with", "revenue", "up", "and", "costs", "down", "as", "planned",
         "so", "we", "ship", "report", "today", "team", "notes", "follow", "next")
ARG_CHUNK = 12  # characters of tool-call arguments per streamed delta


@dataclass(frozen=True)
class Piece:
    """One generated token: a text fragment, a tool call's header, or a chunk of its arguments."""

    kind: str  # text | call | args (a call's header may carry the first chunk of its arguments)
    text: str = ""
    call: int = 0


@dataclass(frozen=True)
class Answer:
    turn: int
    text: str
    calls: tuple[tuple[str, str, str], ...]  # (call_id, name, arguments json)
    pieces: tuple[Piece, ...]


def plan_answer(scenario: Scenario, turn_index: int, run_id: str, seed: int) -> Answer:
    """The model's answer for a turn, and how it splits into tokens. Deterministic by design."""
    turn = scenario.turns[turn_index] if turn_index < len(scenario.turns) else Turn(text_tokens=1)
    pieces: list[Piece] = []
    words = [WORDS[(seed + turn_index * 7 + i) % len(WORDS)] for i in range(turn.text_tokens)]
    if turn_index >= len(scenario.turns):
        words = ["Done."]
    for i, w in enumerate(words):
        pieces.append(Piece("text", w if i == 0 else " " + w))
    calls = tuple((scripted_call_id(run_id, turn_index, j), call.name, json.dumps(call.arguments))
                  for j, call in enumerate(turn.tool_calls))
    pieces.extend(call_pieces(calls))
    return Answer(turn_index, "".join(p.text for p in pieces if p.kind == "text"), calls, tuple(pieces))


def scripted_call_id(run_id: str, turn: int, n: int) -> str:
    """The id of the n-th call of a scripted turn: it names the run, so only a client it was sent to can echo it."""
    return f"call_{run_id}_{turn}_{n}"


def as_answer_call(answer: Answer, tool: str, parameter: str, run_id: str) -> Answer:
    """A text answer as one call of the agent's answer tool, `{parameter: <the text>}`: the same tokens, one delta
    per word as the text streams (the first delta opens the call), so it is generated and billed alike."""
    fragments = [json.dumps(p.text)[1:-1] for p in answer.pieces]  # each word, escaped as inside a JSON string
    fragments[0] = json.dumps({parameter: ""})[:-2] + fragments[0]
    fragments[-1] += '"}'
    pieces = (Piece("call", fragments[0]), *(Piece("args", f) for f in fragments[1:]))
    call = (f"call_{run_id}_{answer.turn}_answer", tool, "".join(fragments))
    return Answer(answer.turn, "", (call,), pieces)


def retry_call_id(run_id: str, turn: int, n: int) -> str:
    """The id of the call the model asks for again in place of scripted call (turn, n): named after it, once."""
    return f"{scripted_call_id(run_id, turn, n)}_again"


def call_pieces(calls: tuple[tuple[str, str, str], ...]) -> tuple[Piece, ...]:
    """Tool calls as tokens: each call's header, then its arguments in ARG_CHUNK-character chunks."""
    pieces: list[Piece] = []
    for j, (_, _, args) in enumerate(calls):
        pieces.append(Piece("call", call=j))
        pieces.extend(Piece("args", args[k:k + ARG_CHUNK], j) for k in range(0, len(args), ARG_CHUNK))
    return tuple(pieces)


def plan_retry(scenario: Scenario, turn: int, again: list[tuple[int, int]], run_id: str) -> Answer:
    """The model's answer when results it was shown read as failed: the same calls again (name and arguments of
    scripted calls (t, n)), under ids of their own, and no text."""
    calls = tuple((retry_call_id(run_id, t, n), scenario.turns[t].tool_calls[n].name,
                   json.dumps(scenario.turns[t].tool_calls[n].arguments)) for t, n in again)
    return Answer(turn, "", calls, call_pieces(calls))


def tokens_per_turn(scenario: Scenario) -> list[int]:
    """Tokens each turn generates (for choosing on:token:N anchors)."""
    return [len(plan_answer(scenario, i, "r", 0).pieces) for i in range(len(scenario.turns))]


def count_tool_results(api: str, body: dict[str, Any], run: Run) -> int:
    """The tool results a request carries, as its API writes them: what decides the model's turn."""
    if api == "anthropic":  # tool_result blocks in the messages' content
        return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    if api == "gemini":  # functionResponse parts of the contents
        return sum(1 for c in body.get("contents") or [] if isinstance(c, dict) and isinstance(c.get("parts"), list)
                   for p in c["parts"] if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict))
    if api == "chat":
        messages = body.get("messages", [])
        n = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
        return n or count_echoed_calls(messages, run)
    items = body.get("input", [])
    n = 0
    if isinstance(items, list):
        n = sum(1 for m in items if isinstance(m, dict) and m.get("type") == "function_call_output")
    prev = body.get("previous_response_id")
    if isinstance(prev, str):
        n += run.responses.get(prev, 0)
    return n


def _text(content: Any) -> str:
    """A tool result's content as text: a string, or the text of its parts (a list of blocks or strings)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(p.get("text", p.get("content")) if isinstance(p, dict) else p) for p in content)
    return "" if content is None else json.dumps(content, default=str)


def read_tool_results(api: str, body: dict[str, Any]) -> list[ToolResult]:
    """The tool results a request carries, as its API writes them: the call each answers and what it says (a
    Responses request continuing from a previous response carries only its new ones)."""
    if api == "anthropic":
        return [ToolResult(b.get("tool_use_id"), _text(b.get("content")), b.get("is_error") is True)
                for m in body.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    if api == "gemini":  # Gemini's convention: the response object holds `output`, or `error` when the call failed
        return [ToolResult(r.get("id"), _text(r.get("response")),
                           isinstance(r.get("response"), dict) and "error" in r["response"])
                for c in body.get("contents") or [] if isinstance(c, dict) and isinstance(c.get("parts"), list)
                for p in c["parts"] if isinstance(p, dict) and isinstance(r := p.get("functionResponse"), dict)]
    if api == "chat":
        return [ToolResult(m.get("tool_call_id"), _text(m.get("content"))) for m in body.get("messages") or []
                if isinstance(m, dict) and m.get("role") == "tool"]
    items = body.get("input")
    return [ToolResult(m.get("call_id"), _text(m.get("output"))) for m in items if isinstance(m, dict)
            and m.get("type") == "function_call_output"] if isinstance(items, list) else []


def scripted_call(run: Run, call_id: Any) -> tuple[int, int] | None:
    """(turn, n) of the scripted call an id names, or None (an id the world did not give, or a retry's)."""
    m = re.fullmatch(re.escape(f"call_{run.run_id}_") + r"(\d+)_(\d+)", call_id) if isinstance(call_id, str) else None
    if m is None:
        return None
    t, n = int(m.group(1)), int(m.group(2))
    return (t, n) if t < len(run.scenario.turns) and n < len(run.scenario.turns[t].tool_calls) else None


def is_retry_result(run: Run, result: ToolResult) -> bool:
    return isinstance(result.call_id, str) and result.call_id.startswith(f"call_{run.run_id}_") \
        and result.call_id.endswith("_again")


def calls_to_ask_again(run: Run, results: list[ToolResult], raw: bytes) -> list[tuple[int, int]]:
    """Under a rule that retries: the scripted calls whose result in this request reads as failed and that the
    model has not asked for again yet (the request mentions no call of that retry's id), in order, each once."""
    if not run.scenario.model_rule.retries_failed_results:
        return []
    again: list[tuple[int, int]] = []
    for result in results:
        call = scripted_call(run, result.call_id)
        if call is not None and call not in again and reads_as_failed(result) \
                and retry_call_id(run.run_id, *call).encode() not in raw:
            again.append(call)
    return again


def count_echoed_calls(messages: Any, run: Run) -> int:
    """The run's scripted calls whose ids the messages' text echoes: how an agent that keeps tool calls and results
    as text ("Calling tools: [{'id': ...}]", then "Observation: ...") carries its results."""
    scripted = {scripted_call_id(run.run_id, t, j) for t, turn in enumerate(run.scenario.turns)
                for j in range(len(turn.tool_calls))}
    echoed = re.compile(re.escape(f"call_{run.run_id}_") + r"\d+_\d+")
    found: set[str] = set()
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else part
            if isinstance(text, str):
                found.update(echoed.findall(text))
    return len(found & scripted)


def answer_tool(body: dict[str, Any], scenario: Scenario) -> tuple[str, str] | None:
    """(name, parameter) of the tool a Chat Completions request must be answered with when its turn is text: under
    `tool_choice: "required"`, the one offered tool that is not a scenario tool, if it takes one parameter (an
    agent's `final_answer`). None when there is no such tool, or more than one: the text is sent, as before."""
    if body.get("tool_choice") != "required" or not isinstance(body.get("tools"), list):
        return None
    offered = [t["function"] for t in body["tools"] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    others = [f for f in offered if not (isinstance(f.get("name"), str)
                                         and (f["name"] in TOOL_NAMES or f["name"] in scenario.tools))]
    if len(others) != 1 or not isinstance(others[0].get("name"), str):
        return None
    parameters = others[0].get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(properties, dict) or len(properties) != 1:
        return None
    return others[0]["name"], next(iter(properties))


#: a token sent at most this share of an interval after its slot keeps the stream's schedule (timer jitter
#: does not slow the scenario's rate); a token later than that moves the schedule to its own send
PACE_SLACK = 0.25


class Pacer:
    """Each token's slot is one interval after the previous token's slot, the first one time-to-first-token
    after the request. A token the machine delayed past its slot by more than PACE_SLACK of an interval moves
    the schedule: the next slot is a full interval after that token's actual send (its ledger stamp), so a late
    token is sent late and the ones after it at the pace, never in a burst that catches up with the old
    schedule (a burst would inflate the tokens after a stop). Two tokens are therefore never less than
    (1 - PACE_SLACK) intervals apart. A hold at an anchor freezes the stream's clock (`held`): it resumes
    at its pace after the hold, as if no time had passed."""

    def __init__(self, scenario: Scenario):
        self.interval = int(1e9 / scenario.tokens_per_s) if scenario.tokens_per_s else 0
        self.paced = bool(self.interval or scenario.ttft_ms)
        self.slot = time.monotonic_ns() + int(scenario.ttft_ms * 1e6)  # the next token's slot

    def sent(self, t: int) -> None:
        """The token due at `self.slot` went out at `t` (its stamp): set the next one's slot."""
        late = t - self.slot > PACE_SLACK * self.interval
        self.slot = (t if late else self.slot) + self.interval

    def held(self, ns: int) -> None:
        """The stream stood still for `ns` nanoseconds: the next slot moves by as much."""
        self.slot += ns

    async def before(self, i: int) -> None:
        if not self.paced:
            if i % 16 == 0:
                await asyncio.sleep(0)  # let the control stream and other streams run
            return
        await sleep_until_ns(self.slot)


async def generate(run: Run, req: int, answer: Answer, emit: Callable[[int, Piece], Awaitable[None]],
                   conn: Connection | None, limit: int | None = None) -> tuple[int, bool]:
    """Generate the answer's tokens (the first `limit` of them, for a reset); stop when the client is gone
    (streams only). Returns (tokens, done)."""
    pacer = Pacer(run.scenario)
    sent = 0
    if conn is not None:  # stamp the moment the client leaves, not the next token's turn
        def gone() -> None:
            run.record(Event.DISCONNECT, req=req, tokens=sent)
            if run.billing.stops_at_disconnect:
                run.record(Event.RESPONSE_DONE, req=req, tokens=sent, complete=False)

        conn.on_gone = gone
    pieces = answer.pieces if limit is None else answer.pieces[:limit]
    resumed = 0  # when the stream last came out of a hold: the provider noticed nothing while it stood still
    for i, piece in enumerate(pieces):
        await pacer.before(i)
        if conn is not None and conn.disconnected:
            await bill_unread(run, req, sent, len(pieces) - i, pacer, max(conn.gone_ns or 0, resumed))
            return sent, False
        pacer.sent(run.record(Event.TOKEN, req=req, i=i)["t"])
        sent += 1
        await emit(i, piece)
        if run.count(Event.TOKEN):  # the next token waits for the stop: counts after it are the client's doing
            held = time.monotonic_ns()
            await run.hold_for_stop(f"token after req {req}")
            resumed = time.monotonic_ns()
            pacer.held(resumed - held)
    return sent, limit is None


async def bill_unread(run: Run, req: int, sent: int, left: int, pacer: Pacer, gone_ns: int) -> None:
    """What the provider still generates after the client left, under the run's billing profile: the answer's
    remaining `left` tokens, at the stream's pace (the next one is due now), until the answer ends or the
    profile's time after `gone_ns` is up (counted from the end of an anchor's hold when that came later: the
    stream's clock stood still). Each is a `token` stamped `unread` (billed, never sent); the answer
    ends with `response_done` saying how many of its tokens nobody read. Nothing under stops_at_disconnect."""
    runs_on = run.billing.runs_on_ms
    if runs_on == 0:
        return
    deadline = None if runs_on is None else gone_ns + int(runs_on * 1e6)
    unread = 0
    while unread < left:
        if deadline is not None and pacer.slot > deadline:  # the engine noticed before this token's turn
            break
        if unread:
            await pacer.before(sent + unread)
        pacer.sent(run.record(Event.TOKEN, req=req, i=sent + unread, unread=True)["t"])
        unread += 1
    run.record(Event.RESPONSE_DONE, req=req, tokens=sent + unread, complete=False, unread=unread)


def prompt_tokens(raw: bytes) -> int:
    return max(1, len(raw) // 4)


@dataclass(frozen=True)
class Request:
    req: int
    answer: Answer
    stream: bool
    fault: Fault | None  # what the provider does instead of answering (scripted), or None
    tool_results: int = 0  # the scripted calls the request carries results of (what decided its turn)


async def new_request(run: Run, api: str, body: dict[str, Any], raw: bytes) -> Request:
    """Record the request; hold it at the stop anchor (its own, or a fault's that came before it)."""
    req = run.next_id()
    shown = read_tool_results(api, body)
    # a retried call's result answers no scripted call: the script moves on by the others
    results = count_tool_results(api, body, run) - sum(is_retry_result(run, r) for r in shown)
    turn = run.scenario.turn_for(results)
    stream = bool(body.get("stream"))
    again = calls_to_ask_again(run, shown, raw)
    answer = plan_retry(run.scenario, turn, again, run.run_id) if again else \
        plan_answer(run.scenario, turn, run.run_id, run.seed)
    tool = answer_tool(body, run.scenario) if api == "chat" and not answer.calls and answer.pieces else None
    extra: dict[str, Any] = {}
    if tool is not None:
        answer = as_answer_call(answer, *tool, run.run_id)
        extra["answer_tool"] = tool[0]
    if again:
        extra["asked_again"] = [c for c, _, _ in answer.calls]
    run.record(Event.LLM_REQUEST, req=req, api=api, stream=stream, turn=turn, tool_results=results,
               prompt_tokens=prompt_tokens(raw), **extra)
    failed = {r.call_id: r.text for r in shown}
    for (t, n), (call_id, name, _) in zip(again, answer.calls if again else (), strict=True):
        original = scripted_call_id(run.run_id, t, n)
        run.record(Event.TOOL_RETRY_ASKED, req=req, call_id=original, retry_id=call_id, tool=name,
                   result=failed.get(original, "")[:200], rule=run.scenario.model_rule.name)
    if run.count(Event.LLM_REQUEST) or run.model_frozen:
        await run.hold_for_stop(f"req {req}")
    return Request(req, answer, stream, faults.next_fault(run, turn), results)


# ----- Chat Completions -----------------------------------------------------------------------------

async def chat_completions(run: Run, body: dict[str, Any], raw: bytes, conn: Connection) -> None:
    r = await new_request(run, "chat", body, raw)
    req, answer, stream, fault = r.req, r.answer, r.stream, r.fault
    if fault is not None and fault.status is not None:
        return await faults.send_error(run, req, fault, conn)
    reset = None if fault is None else fault.reset_after_tokens
    model = str(body.get("model", "scripted"))
    cid = f"chatcmpl-{run.run_id}-{req}"
    created = int(time.time())
    ptoks = prompt_tokens(raw)
    finish = "tool_calls" if answer.calls else "stop"
    run.request_opened()
    try:
        if not stream:
            tokens, done = await generate(run, req, answer, no_emit, None, reset)
            if fault is not None and not done:
                return await drop_plain(run, req, fault, tokens, conn)
            message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
            if answer.calls:
                message["tool_calls"] = [{"id": c, "type": "function", "function": {"name": n, "arguments": a}}
                                         for c, n, a in answer.calls]
            await conn.send_json(200, {
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": _chat_usage(ptoks, tokens),
            })
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
            return

        head = f'{{"id":"{cid}","object":"chat.completion.chunk","created":{created},"model":{json.dumps(model)},'
        await conn.start_sse()

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return (f'data: {head}"choices":[{{"index":0,"delta":{json.dumps(delta)},'
                    f'"finish_reason":{json.dumps(finish_reason)},"logprobs":null}}]}}\n\n').encode()

        await conn.send_body(chunk({"role": "assistant", "content": ""}))

        async def emit(i: int, piece: Piece) -> None:
            if piece.kind == "text":
                delta: dict[str, Any] = {"content": piece.text}
            elif piece.kind == "call":
                call_id, name, _ = answer.calls[piece.call]
                delta = {"tool_calls": [{"index": piece.call, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": piece.text}}]}
            else:
                delta = {"tool_calls": [{"index": piece.call, "function": {"arguments": piece.text}}]}
            await conn.send_body(chunk(delta))

        tokens, done = await generate(run, req, answer, emit, conn, reset)
        if fault is not None and not conn.disconnected:
            return faults.dropped(run, req, fault, tokens, conn)
        if done:
            await conn.send_body(chunk({}, finish))
            opts = body.get("stream_options") or {}
            if isinstance(opts, dict) and opts.get("include_usage"):
                usage = json.dumps(_chat_usage(ptoks, tokens))
                await conn.send_body(f'data: {head}"choices":[],"usage":{usage}}}\n\n'.encode())
            await conn.send_body(b"data: [DONE]\n\n", more=False)
        if done:
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
    finally:
        run.request_closed()


def _chat_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}}


async def no_emit(i: int, piece: Piece) -> None:
    return None


async def drop_plain(run: Run, req: int, fault: Fault, tokens: int, conn: Connection) -> None:
    """A non-streamed answer reset: the status line and headers went out, the body never does."""
    await conn.start(200, [(b"content-type", b"application/json"), (b"content-length", b"4096")])
    faults.dropped(run, req, fault, tokens, conn)


# ----- Responses ------------------------------------------------------------------------------------

def _responses_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}


def tool_namespaces(body: dict[str, Any]) -> dict[str, str]:
    """Tool name -> the namespace a Responses request offers it in (`{"type": "namespace", "name": "mcp__world",
    "tools": [...]}`, as Codex CLI offers MCP tools): a call of such a tool names its namespace, or the client does
    not know where to send it."""
    found: dict[str, str] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    found.setdefault(inner["name"], tool["name"])
    return found


def _output_items(run: Run, req: int, answer: Answer, namespaces: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.text:
        items.append({"type": "message", "id": f"msg_{run.run_id}_{req}", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": answer.text, "annotations": [],
                                   "logprobs": []}]})
    for j, (call_id, name, args) in enumerate(answer.calls):
        items.append({"type": "function_call", "id": f"fc_{run.run_id}_{req}_{j}", "call_id": call_id,
                      "name": name, "arguments": args, "status": "completed",
                      **({"namespace": namespaces[name]} if name in namespaces else {})})
    return items


def _response_object(run: Run, req: int, body: dict[str, Any], status: str, output: list, usage) -> dict:
    return {
        "id": f"resp_{run.run_id}_{req}", "object": "response", "created_at": int(time.time()),
        "status": status, "model": str(body.get("model", "scripted")), "output": output,
        "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []), "usage": usage, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "text": {"format": {"type": "text"}}, "previous_response_id": body.get("previous_response_id"),
        "reasoning": None, "store": body.get("store", True) is not False, "truncation": "disabled",
    }


class InvalidRequest(ValueError):
    """What the real API answers with 400 invalid_request_error: the message is the API's own, and `body` the
    error JSON in the API's shape (OpenAI's when not given)."""

    def __init__(self, message: str, body: dict[str, Any] | None = None):
        super().__init__(message)
        self.body = body


def check_previous_response(run: Run, body: dict[str, Any]) -> None:
    """previous_response_id must name a response of this run, and the input must carry a
    function_call_output for every function call that response asked for (the API answers 400 otherwise)."""
    prev = body.get("previous_response_id")
    if not isinstance(prev, str):
        return
    if prev not in run.responses:
        raise InvalidRequest(f"Previous response with id '{prev}' not found.")
    items = body.get("input")
    answered = {m.get("call_id") for m in items if isinstance(m, dict) and m.get("type") == "function_call_output"} \
        if isinstance(items, list) else set()
    missing = [c for c in run.response_calls.get(prev, ()) if c not in answered]
    if missing:
        raise InvalidRequest(f"No tool output found for function call {missing[0]}.")


async def responses(run: Run, body: dict[str, Any], raw: bytes, conn: Connection) -> None:
    check_previous_response(run, body)
    r = await new_request(run, "responses", body, raw)
    req, answer, stream, fault = r.req, r.answer, r.stream, r.fault
    if fault is not None and fault.status is not None:
        return await faults.send_error(run, req, fault, conn)
    reset = None if fault is None else fault.reset_after_tokens
    run.responses[f"resp_{run.run_id}_{req}"] = r.tool_results
    asked = tuple(c for c, _, _ in answer.calls)
    ptoks = prompt_tokens(raw)
    items = _output_items(run, req, answer, tool_namespaces(body))
    run.request_opened()
    try:
        if not stream:
            tokens, done = await generate(run, req, answer, no_emit, None, reset)
            if fault is not None and not done:
                return await drop_plain(run, req, fault, tokens, conn)
            await conn.send_json(200, _response_object(run, req, body, "completed", items,
                                                       _responses_usage(ptoks, tokens)))
            run.response_calls[f"resp_{run.run_id}_{req}"] = asked
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
            return
        await conn.start_sse()
        seq = 0

        async def event(payload: dict[str, Any]) -> None:
            nonlocal seq
            payload["sequence_number"] = seq
            seq += 1
            await conn.send_body(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode())

        shell = _response_object(run, req, body, "in_progress", [], None)
        await event({"type": "response.created", "response": shell})
        await event({"type": "response.in_progress", "response": shell})
        has_text = bool(answer.text)
        msg_id = f"msg_{run.run_id}_{req}"
        text_so_far: list[str] = []
        args_so_far: dict[int, list[str]] = {}

        async def close_text() -> None:
            text = "".join(text_so_far)
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            await event({"type": "response.output_text.done", "item_id": msg_id, "output_index": 0,
                         "content_index": 0, "text": text, "logprobs": []})
            await event({"type": "response.content_part.done", "item_id": msg_id, "output_index": 0,
                         "content_index": 0, "part": part})
            await event({"type": "response.output_item.done", "output_index": 0, "item": items[0]})

        async def close_call(j: int) -> None:
            idx = j + (1 if has_text else 0)
            item = items[idx]
            await event({"type": "response.function_call_arguments.done", "item_id": item["id"],
                         "output_index": idx, "arguments": item["arguments"], "name": item["name"]})
            await event({"type": "response.output_item.done", "output_index": idx, "item": item})

        async def emit(i: int, piece: Piece) -> None:
            if piece.kind == "text":
                if i == 0:
                    await event({"type": "response.output_item.added", "output_index": 0,
                                 "item": {"type": "message", "id": msg_id, "role": "assistant",
                                          "status": "in_progress", "content": []}})
                    await event({"type": "response.content_part.added", "item_id": msg_id, "output_index": 0,
                                 "content_index": 0,
                                 "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}})
                text_so_far.append(piece.text)
                await event({"type": "response.output_text.delta", "item_id": msg_id, "output_index": 0,
                             "content_index": 0, "delta": piece.text, "logprobs": []})
                return
            idx = piece.call + (1 if has_text else 0)
            item = items[idx]
            if piece.kind == "call":
                if piece.call == 0 and has_text:
                    await close_text()
                elif piece.call > 0:
                    await close_call(piece.call - 1)
                args_so_far[piece.call] = []
                await event({"type": "response.output_item.added", "output_index": idx,
                             "item": {**item, "arguments": "", "status": "in_progress"}})
            else:
                args_so_far[piece.call].append(piece.text)
                await event({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                             "output_index": idx, "delta": piece.text})

        tokens, done = await generate(run, req, answer, emit, conn, reset)
        if fault is not None and not conn.disconnected:
            return faults.dropped(run, req, fault, tokens, conn)
        if done:
            if answer.calls:
                await close_call(len(answer.calls) - 1)
            elif has_text:
                await close_text()
            await event({"type": "response.completed",
                         "response": _response_object(run, req, body, "completed", items,
                                                      _responses_usage(ptoks, tokens))})
            await conn.send_body(b"", more=False)
            run.response_calls[f"resp_{run.run_id}_{req}"] = asked
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
    finally:
        run.request_closed()
