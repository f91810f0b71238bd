"""Side-effect services: email, pull requests, calendar, chat (and a read-only docs service).

An effect is stamped when received and when committed; `effect_received` also carries `sent_t`, when
the harness's tools sent it (their SENT_HEADER), so the metrics can tell a call sent before the stop
that arrived after it from one sent after it. It commits even if the client went away
(as a real mail API does) unless the scenario says otherwise. Idempotency-Key repeats get the first
answer and are recorded as duplicate attempts, never as a second effect.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from harness.clock import sleep_ms
from harness.tools.catalogue import COMPENSATION_PATH, TOOL_KIND, TOOL_PARAMETERS, TOOL_SPECS, logical_effect
from harness.vocabulary import SENT_HEADER, Event
from harness.world.asgi import Connection
from harness.world.ledger import Effect, Run

# service path ("email/send") -> tool name
EFFECT_PATHS = {TOOL_SPECS[t][0]: t for t in TOOL_KIND}
COMPENSATIONS = {path: kind for kind, path in COMPENSATION_PATH.items()}


class BadRequest(ValueError):
    pass


def _args(tool: str, body: Any) -> dict[str, str]:
    if not isinstance(body, dict):
        raise BadRequest(f"{tool}: body must be a JSON object")
    missing = [p for p in TOOL_PARAMETERS[tool] if not isinstance(body.get(p), str)]
    if missing:
        raise BadRequest(f"{tool}: missing or non-string field(s): {', '.join(missing)}")
    return {p: body[p] for p in TOOL_PARAMETERS[tool]}


def _sent_t(conn: Connection, received_ns: int) -> dict[str, int]:
    """{"sent_t": the harness's send stamp} if the request carries one that can be on our clock, else {}.

    Not a 400: requests from other clients (no header, or one of their own) are served as before; only
    a stamp that is a plain integer no later than the receipt (one monotonic clock) is recorded.
    """
    raw = conn.header(SENT_HEADER)
    if raw is None or not (raw.isascii() and raw.isdigit()) or len(raw) > 20:
        return {}
    sent = int(raw)
    return {"sent_t": sent} if sent <= received_ns else {}


def _shown(arguments: dict[str, Any]) -> dict[str, str]:
    """The effect's arguments as the ledger keeps them (each cut to 80 characters): evidence says which
    email went out, not only that one did."""
    return {k: str(v)[:80] for k, v in list(arguments.items())[:8]}


async def effect(run: Run, path: str, body: Any, conn: Connection) -> dict[str, Any]:
    tool = EFFECT_PATHS[path]
    kind = TOOL_KIND[tool]
    arguments = _args(tool, body)
    key = conn.header("idempotency-key")
    if key and (kind, key) in run.by_key:  # a key is scoped to its service, as real APIs scope theirs
        first = run.by_key[(kind, key)]
        run.record(Event.EFFECT_DUPLICATE, kind=kind, effect_id=first.effect_id, idempotency_key=key)
        return await asyncio.shield(first.committed)
    n = run.counters.get(f"{Event.EFFECT_RECEIVED}:{kind}", 0) + 1
    effect_id = f"{kind}_{n}"
    now = time.monotonic_ns()
    received = run.record(Event.EFFECT_RECEIVED, t=now, kind=kind, effect_id=effect_id, idempotency_key=key,
                          logical=logical_effect(kind, arguments), n=n, args=_shown(arguments), **_sent_t(conn, now))
    anchored = run.count(Event.EFFECT_RECEIVED, kind)  # after the record: anchor_fired follows its event
    fut: asyncio.Future = asyncio.get_running_loop().create_future()
    eff = Effect(effect_id, kind, received["logical"], key, fut, received["t"])
    run.effects[effect_id] = eff
    if key:
        run.by_key[(kind, key)] = eff
    run.request_opened()
    # The commit runs on its own: a client that leaves does not stop the mail going out.
    asyncio.get_running_loop().create_task(_commit(run, eff, anchored, conn))
    return await asyncio.shield(fut)


async def _commit(run: Run, eff: Effect, anchored: bool, conn: Connection) -> None:
    try:
        if anchored:  # "stop while the email is in flight": the commit waits for the stop
            await run.hold_for_stop(eff.effect_id)
        await sleep_ms(run.scenario.latency_ms[eff.kind])
        if conn.disconnected and not run.scenario.commit_on_disconnect:
            run.record(Event.EFFECT_ABORTED, kind=eff.kind, effect_id=eff.effect_id)
            eff.status = "aborted"
            eff.committed.set_result({"effect_id": eff.effect_id, "kind": eff.kind, "status": "aborted"})
            return
        entry = run.record(Event.EFFECT_COMMITTED, kind=eff.kind, effect_id=eff.effect_id, logical=eff.logical,
                           client_gone=conn.disconnected)
        eff.status, eff.committed_ns = "committed", entry["t"]
        if run.count(Event.EFFECT_COMMITTED, eff.kind):  # the agent hears of the commit only after the stop
            await run.hold_for_stop(eff.effect_id)
        eff.committed.set_result({"effect_id": eff.effect_id, "kind": eff.kind, "status": "committed",
                                  "committed_ns": entry["t"]})
    finally:
        run.request_closed()


async def compensate(run: Run, path: str, body: Any) -> dict[str, Any]:
    kind = COMPENSATIONS[path]
    if not isinstance(body, dict):
        raise BadRequest(f"{path}: body must be a JSON object with effect_id or idempotency_key")
    eff = None
    if isinstance(body.get("effect_id"), str):
        eff = run.effects.get(body["effect_id"])
    elif isinstance(body.get("idempotency_key"), str):
        eff = run.by_key.get((kind, body["idempotency_key"]))
    else:
        raise BadRequest(f"{path}: give effect_id or idempotency_key")
    if eff is None or eff.kind != kind:
        raise LookupError(f"{path}: no {kind} effect {body.get('effect_id') or body.get('idempotency_key')!r}")
    run.request_opened()
    try:
        await sleep_ms(run.scenario.latency_ms[kind])
        run.record(Event.COMPENSATION, kind=kind, effect_id=eff.effect_id, committed=eff.committed.done())
    finally:
        run.request_closed()
    return {"effect_id": eff.effect_id, "kind": kind, "status": "compensated"}


def lookup(run: Run, query: dict[str, str]) -> dict[str, Any]:
    """What became of the effect a request with this Idempotency-Key started (real services offer
    such a lookup; a saga needs it for calls whose answer never came back)."""
    key, kind = query.get("idempotency_key"), query.get("kind")
    if not key:
        raise BadRequest("effects: give ?idempotency_key= (and &kind= where the key was used with several services)")
    found = [e for (k, used), e in run.by_key.items() if used == key and kind in (None, k)]
    if not found:
        raise LookupError(f"effects: no effect with idempotency key {key!r}" + (f" and kind {kind!r}" if kind else ""))
    if len(found) > 1:
        raise BadRequest(f"effects: idempotency key {key!r} was used with {', '.join(e.kind for e in found)}; "
                         "give &kind=")
    eff = found[0]
    return {"effect_id": eff.effect_id, "kind": eff.kind, "status": eff.status,
            "committed_ns": eff.committed_ns}


async def draft(run: Run, body: Any) -> dict[str, Any]:
    arguments = _args("draft_document", body)
    run.request_opened()
    try:
        await sleep_ms(run.scenario.latency_ms["docs"])
        run.record(Event.READ, kind="docs")
    finally:
        run.request_closed()
    return {"title": arguments["title"], "text": f"Draft about {arguments['topic']}: numbers are in."}
