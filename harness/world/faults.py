"""Scripted provider faults: the world answers a model request with an HTTP error or drops it mid-way.

A turn's faults are served, in order, to the turn's first requests before the stop is pressed; a faulted
request does not consume the turn, so a client that retries gets the next fault or the real answer (as a client
retrying a real provider's 429 would). Each fault sent is an `llm_error` in the ledger and can anchor the stop
(`on:llm_error:N`); once that anchor fired, the run's model requests wait for the stop (`Run.model_frozen`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.scenario import Fault
from harness.vocabulary import Event
from harness.world.asgi import Connection
from harness.world.ledger import Run

#: OpenAI's error envelope per status: (type, code, message), as the real API words them
_ERRORS: dict[int, tuple[str, str | None, str]] = {
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The server is overloaded or not ready yet."),
    504: ("server_error", None, "Gateway timeout."),
}


def next_fault(run: Run, turn: int) -> Fault | None:
    """The fault this request for `turn` gets, if the turn has one left; the turn is answered after its last.
    Faults are served only before the stop is pressed: they are there for the stop to land among them, and the
    rest of the run (what the stop let through, the resume) meets a provider that answers, so a resume that
    fails is the framework's, not the script's."""
    if run.stop_called.is_set():
        return None
    faults = run.scenario.turns[turn].faults if turn < len(run.scenario.turns) else ()
    served = run.faults_served.get(turn, 0)
    if served >= len(faults):
        return None
    run.faults_served[turn] = served + 1
    return faults[served]


def error_body(fault: Fault) -> dict[str, Any]:
    """The body a real OpenAI endpoint (Chat Completions or Responses, streamed or not) sends with the status."""
    status = fault.status or 500
    kind, code, message = _ERRORS.get(status, _ERRORS[500])
    if fault.retry_after_s is not None and status == 429:
        message = f"Rate limit reached for requests. Please try again in {fault.retry_after_s}s."
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


#: an error answer as one API writes it: (body, extra headers)
ErrorReply = tuple[dict[str, Any], list[tuple[bytes, bytes]]]


def retry_after_header(fault: Fault) -> list[tuple[bytes, bytes]]:
    """The scripted back-off as a `Retry-After` header (OpenAI and Anthropic send one), or none."""
    return [] if fault.retry_after_s is None else [(b"retry-after", str(fault.retry_after_s).encode())]


def openai_error(fault: Fault) -> ErrorReply:
    return error_body(fault), retry_after_header(fault)


async def send_error(run: Run, req: int, fault: Fault, conn: Connection,
                     reply: Callable[[Fault], ErrorReply] = openai_error) -> None:
    """Answer with the fault's status in the API's own words (`reply`), then record it: the client has it when
    the stop fires."""
    body, headers = reply(fault)
    await conn.send_json(fault.status or 500, body, headers)
    sent(run, req, fault, status=fault.status, retry_after_s=fault.retry_after_s)


def dropped(run: Run, req: int, fault: Fault, tokens: int, conn: Connection) -> None:
    """The response goes no further: the connection is closed without the rest (no terminating chunk)."""
    conn.drop()
    sent(run, req, fault, tokens=tokens)
    run.record(Event.RESPONSE_DONE, req=req, tokens=tokens, complete=False)


def sent(run: Run, req: int, fault: Fault, **data: Any) -> None:
    n = run.counters.get(Event.LLM_ERROR, 0) + 1
    run.record(Event.LLM_ERROR, req=req, kind=fault.kind, n=n, **data)
    if run.count(Event.LLM_ERROR):
        run.model_frozen = True
