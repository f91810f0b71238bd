"""The scripted model on the Gemini wire (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent?alt=sse`), streamed and not.

The same scenario, turns, tokens, pacing, anchors and ledger events as the OpenAI routes (harness/world/
model_api.py): only the wire differs. A stream is a series of GenerateContentResponse chunks; one text token is
one chunk. Gemini streams a function call whole, so a call's tokens are generated (and stamped) one by one and its
functionCall part goes out in the chunk of its last token. The last chunk carries finishReason and the full
usageMetadata; earlier ones carry the prompt's count only.
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

#: Google's status name and message per HTTP status (https://ai.google.dev/gemini-api/docs/troubleshooting)
_ERRORS: dict[int, tuple[str, str]] = {
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in "
                      "https://developers.generativeai.google/guide/troubleshooting"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}
STREAM_METHOD, PLAIN_METHOD = "streamGenerateContent", "generateContent"
METHODS = (PLAIN_METHOD, STREAM_METHOD)
#: the API versions a client may name in the path (google-genai picks one by its release)
API_VERSIONS = ("v1", "v1beta", "v1alpha")


def error_body(status: int, name: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": status, "message": message, "status": name}
    if details:
        error["details"] = details
    return {"error": error}


def fault_reply(fault: Fault) -> faults.ErrorReply:
    """A scripted fault as Google sends it: the back-off as a RetryInfo detail, not a header."""
    status = fault.status or 500
    name, message = _ERRORS.get(status, _ERRORS[500])
    details = None if fault.retry_after_s is None else [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{fault.retry_after_s}s"}]
    return error_body(status, name, message, details), []


def _parts(content: Any, key: str) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict) and isinstance(p.get(key), dict)] if isinstance(parts, list) else []


def check_function_responses(body: dict[str, Any]) -> None:
    """A turn of function responses must follow a model turn of function calls, one response per call: the API
    refuses anything else with 400 INVALID_ARGUMENT, in these words."""
    contents = body.get("contents") or []
    for k, content in enumerate(contents):
        responses = _parts(content, "functionResponse")
        if not responses:
            continue
        calls = _parts(contents[k - 1], "functionCall") if k else []
        if not calls:
            _refuse("Please ensure that function response turn comes immediately after a function call turn.")
        if len(calls) != len(responses):
            _refuse("Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.")


def _refuse(message: str) -> None:
    raise InvalidRequest(message, error_body(400, "INVALID_ARGUMENT", message))


def _usage(prompt: int, output: int | None) -> dict[str, Any]:
    if output is None:
        return {"promptTokenCount": prompt, "totalTokenCount": prompt}
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


def _call_part(call: tuple[str, str, str]) -> dict[str, Any]:
    call_id, name, args = call
    return {"functionCall": {"id": call_id, "name": name, "args": json.loads(args)}}


def _chunk(run: Run, req: int, model: str, parts: list[dict[str, Any]], usage: dict[str, Any],
           finished: bool = False) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finished:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
            "responseId": f"resp_{run.run_id}_{req}"}


def _last_piece_of_each_call(answer: Answer) -> dict[int, int]:
    """Piece index -> the call it completes."""
    last: dict[int, int] = {}
    for i, piece in enumerate(answer.pieces):
        if piece.kind != "text":
            last[piece.call] = i
    return {i: call for call, i in last.items()}


async def generate_content(run: Run, model: str, method: str, body: dict[str, Any], raw: bytes,
                           conn: Connection) -> None:
    if method == STREAM_METHOD and conn.query().get("alt") != "sse":
        raise InvalidRequest("the world streams Gemini as server-sent events only: call "
                             ":streamGenerateContent?alt=sse (as google-genai does)",
                             error_body(400, "INVALID_ARGUMENT", "streamGenerateContent needs ?alt=sse here"))
    check_function_responses(body)
    r = await new_request(run, "gemini", {**body, "stream": method == STREAM_METHOD}, raw)
    req, answer, fault = r.req, r.answer, r.fault
    if fault is not None and fault.status is not None:
        return await faults.send_error(run, req, fault, conn, fault_reply)
    reset = None if fault is None else fault.reset_after_tokens
    ptoks = prompt_tokens(raw)
    run.request_opened()
    try:
        if not r.stream:
            tokens, done = await generate(run, req, answer, no_emit, None, reset)
            if fault is not None and not done:
                return await drop_plain(run, req, fault, tokens, conn)
            parts = ([{"text": answer.text}] if answer.text else []) + [_call_part(c) for c in answer.calls]
            await conn.send_json(200, _chunk(run, req, model, parts, _usage(ptoks, tokens), finished=True))
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
            return
        await conn.start_sse()
        completes = _last_piece_of_each_call(answer)

        async def chunk(parts: list[dict[str, Any]], usage: dict[str, Any], finished: bool = False) -> None:
            payload = _chunk(run, req, model, parts, usage, finished)
            await conn.send_body(f"data: {json.dumps(payload)}\r\n\r\n".encode())

        async def emit(i: int, piece: Piece) -> None:
            if piece.kind == "text":
                await chunk([{"text": piece.text}], _usage(ptoks, None))
            elif i in completes:
                await chunk([_call_part(answer.calls[completes[i]])], _usage(ptoks, None))

        tokens, done = await generate(run, req, answer, emit, conn, reset)
        if fault is not None and not conn.disconnected:
            return faults.dropped(run, req, fault, tokens, conn)
        if done:
            await chunk([{"text": ""}], _usage(ptoks, tokens), finished=True)
            await conn.send_body(b"", more=False)
            run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=True)
    finally:
        run.request_closed()
