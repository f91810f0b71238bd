"""The scripted model on the Anthropic Messages wire (`POST /v1/messages`), streamed and not.

The same scenario, turns, tokens, pacing, anchors and ledger events as the OpenAI routes (harness/world/
model_api.py): only the wire differs. A stream is Anthropic's event sequence (message_start, content_block_start,
content_block_delta text_delta / input_json_delta, content_block_stop, message_delta with the output usage and
stop_reason, message_stop); one token is one content_block_delta, or the content_block_start of a tool_use block.
As on the real API, output usage comes only in the last events: a client that leaves early reads none.
"""

from __future__ import annotations

import json
from typing import Any

from harness.scenario import Fault
from harness.vocabulary import Event
from harness.world import faults
from harness.world.asgi import Connection
from harness.world.ledger import Run
from harness.world.model_api import (
    Answer,
    InvalidRequest,
    Piece,
    drop_plain,
    generate,
    new_request,
    no_emit,
    prompt_tokens,
)

#: Anthropic's error type and message per status (https://docs.claude.com/en/api/errors)
_ERRORS: dict[int, tuple[str, str]] = {
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit. Please try again later."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def error_body(kind: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return body


def fault_reply(fault: Fault) -> faults.ErrorReply:
    """A scripted fault as Anthropic sends it: its error JSON, and Retry-After when the script has one."""
    kind, message = _ERRORS.get(fault.status or 500, _ERRORS[500])
    return error_body(kind, message), faults.retry_after_header(fault)


def check_tool_results(body: dict[str, Any]) -> None:
    """Each tool_result must answer a tool_use of the message just before it, and each tool_use of an assistant
    message must be answered by a tool_result in the next one: the API refuses anything else with 400, in these
    words."""
    messages = body.get("messages") or []
    previous_uses: set[str] = set()
    for m, message in enumerate(messages):
        blocks = message.get("content") if isinstance(message, dict) else None
        blocks = blocks if isinstance(blocks, list) else []
        answered = {b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"}
        for c, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") == "tool_result" \
                    and block.get("tool_use_id") not in previous_uses:
                _refuse(f"messages.{m}.content.{c}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.")
        if m and previous_uses - answered:
            missing = ", ".join(sorted(previous_uses - answered))
            _refuse(f"messages.{m - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{missing}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
                    "message.")
        previous_uses = {b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"} \
            if isinstance(message, dict) and message.get("role") == "assistant" else set()


def _refuse(message: str) -> None:
    raise InvalidRequest(message, error_body("invalid_request_error", message))


def mcp_tool_names(body: dict[str, Any]) -> dict[str, str]:
    """Tool name -> the name a request offers it under when an MCP client prefixes it with its server
    (`mcp__<server>__<tool>`, as Claude Code names an MCP server's tools): a model calls the tool by the name it was
    offered. A tool also offered under its bare name keeps it."""
    offered = [t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
    found: dict[str, str] = {}
    for name in offered:
        prefix, _, tool = name.rpartition("__")
        if prefix.startswith("mcp__") and tool and tool not in offered:
            found.setdefault(tool, name)
    return found


def _usage(prompt: int, output: int) -> dict[str, Any]:
    return {"input_tokens": prompt, "output_tokens": output, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def _blocks(answer: Answer, names: dict[str, str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [{"type": "tool_use", "id": c, "name": names.get(n, n), "input": json.loads(a)}
               for c, n, a in answer.calls]
    return blocks


def _message(run: Run, req: int, model: str, content: list, stop_reason: str | None,
             usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"msg_{run.run_id}_{req}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


async def messages(run: Run, body: dict[str, Any], raw: bytes, conn: Connection) -> None:
    check_tool_results(body)
    r = await new_request(run, "anthropic", body, raw)
    req, answer, fault = r.req, r.answer, r.fault
    if fault is not None and fault.status is not None:
        return await faults.send_error(run, req, fault, conn, fault_reply)
    reset = None if fault is None else fault.reset_after_tokens
    model = str(body.get("model", "scripted"))
    ptoks = prompt_tokens(raw)
    stop_reason = "tool_use" if answer.calls else "end_turn"
    names = mcp_tool_names(body)
    run.request_opened()
    try:
        if not r.stream:
            tokens, done = await generate(run, req, answer, no_emit, None, reset)
            if fault is not None and not done:
                return await drop_plain(run, req, fault, tokens, conn)
            content = _blocks(answer, names)
            await conn.send_json(200, _message(run, req, model, content, stop_reason, _usage(ptoks, tokens)))
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
            return
        await conn.start_sse()

        async def event(payload: dict[str, Any]) -> None:
            await conn.send_body(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode())

        await event({"type": "message_start", "message": _message(run, req, model, [], None, _usage(ptoks, 1))})
        await event({"type": "ping"})
        has_text = bool(answer.text)

        def index(piece: Piece) -> int:
            return 0 if piece.kind == "text" else piece.call + has_text

        async def emit(i: int, piece: Piece) -> None:
            if piece.kind == "text" and i == 0:
                await event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            if piece.kind == "call":
                if index(piece):
                    await event({"type": "content_block_stop", "index": index(piece) - 1})
                call_id, name, _ = answer.calls[piece.call]
                await event({"type": "content_block_start", "index": index(piece),
                             "content_block": {"type": "tool_use", "id": call_id, "name": names.get(name, name),
                                               "input": {}}})
                if not piece.text:
                    return
            delta = {"type": "text_delta", "text": piece.text} if piece.kind == "text" else \
                {"type": "input_json_delta", "partial_json": piece.text}
            await event({"type": "content_block_delta", "index": index(piece), "delta": delta})

        tokens, done = await generate(run, req, answer, emit, conn, reset)
        if fault is not None and not conn.disconnected:
            return faults.dropped(run, req, fault, tokens, conn)
        if done:
            await event({"type": "content_block_stop", "index": index(answer.pieces[-1])})
            await event({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                         "usage": {"output_tokens": tokens}})
            await event({"type": "message_stop"})
            await conn.send_body(b"", more=False)
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
    finally:
        run.request_closed()
