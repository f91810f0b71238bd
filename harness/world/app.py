"""The world's HTTP surface: runs, the model API, services, marks, the ledger and the control stream.

Routes (everything for a run lives under /runs/<run_id>/):
  POST /runs                          create a run {"scenario", "seed", "stop_anchor", "billing"}
  GET  /runs/<id>/ledger              the run's events
  POST /runs/<id>/marks               the trial's stamped marks {"name", "t"?, "data"?} (or a list of them)
  GET  /runs/<id>/control             SSE stream: `stop` when the run's anchor happens
  GET  /runs/<id>/quiet               wait until the run is quiet ?window_ms=&deadline_ms=&floor_ms=
  GET  /runs/<id>/effects             what became of a request ?idempotency_key= (not a ledger event)
  DELETE /runs/<id>                  forget a run (its row is written)
  POST /runs/<id>/processes           a process of the run registers itself {"pid", "role"}
  POST /runs/<id>/v1/chat/completions and /v1/responses   the scripted model (OpenAI)
  POST /runs/<id>/v1/messages         the scripted model (Anthropic Messages)
  POST /runs/<id>/v1beta/models/<model>:generateContent and :streamGenerateContent?alt=sse   (Gemini)
  POST /runs/<id>/<kind>/<action>     services (email/send, email/recall, pr/open, ...)
  GET  /unattributed                  requests that named no known run
Bad input never crashes the server: unknown run -> 404 (recorded), bad body -> 400 with a message.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from harness.billing import BillingError, parse_billing
from harness.scenario import Offset, ScenarioError
from harness.vocabulary import Event
from harness.world import anthropic_api, gemini_api, model_api, services
from harness.world.asgi import BodyTooLarge, Connection
from harness.world.ledger import Run, World

MAX_QUIET_MS = 600_000  # the longest a trial waits for quiet
#: a run is quiet once nothing happened for longer than this many times its longest pause before the stop (a
#: framework that takes 2 s between steps is between two steps, not done, after 250 ms of nothing) ...
PAUSE_MARGIN = 1.5
#: ... and at most this long: a window past it would make a slow but finished run wait for the deadline
MAX_PAUSE_WINDOW_MS = 5_000.0
MAX_RUNS = 5_000  # runs kept at once; the runner deletes each run once its row is written


class HTTPError(Exception):
    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body  # the error in the shape of the API the request spoke, when not the world's own


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError as e:
        raise HTTPError(400, f"body is not valid JSON: {e}") from e
    except RecursionError as e:
        raise HTTPError(400, "body is nested too deeply") from e


def _model_body(api: str, body: Any) -> dict[str, Any]:
    """The fields the scripted model reads, each of the type the API defines, or a 400 naming the field."""
    if not isinstance(body, dict):
        raise HTTPError(400, "model request: body must be a JSON object")
    expected: dict[str, tuple[type, ...]] = {
        "chat": {"messages": (list,), "stream_options": (dict,), "previous_response_id": (str,)},
        "responses": {"input": (list, str), "stream_options": (dict,), "previous_response_id": (str,)},
        "anthropic": {"messages": (list,), "system": (str, list)},
        "gemini": {"contents": (list,)},
    }[api] | {"tools": (list,)}
    for name, types in expected.items():
        if body.get(name) is not None and not isinstance(body[name], types):
            want = " or ".join("array" if t is list else "object" if t is dict else "string" for t in types)
            raise HTTPError(400, f"model request: '{name}' must be {want}, got {type(body[name]).__name__}")
    return body


class WorldApp:
    def __init__(self, scenarios_dir: Path, host_url: str = ""):
        self.world = World(scenarios_dir)
        self.host_url = host_url  # set once the port is known

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        conn = Connection(scope, receive, send)
        try:
            try:
                raw = await conn.read_body()
            except BodyTooLarge as e:
                raise HTTPError(413, str(e)) from e
            await self.route(conn, raw)
        except HTTPError as e:
            if not conn.started:
                await conn.send_json(e.status, e.body or {"error": {"message": e.message, "code": e.status}})
        except Exception as e:  # the world never dies of a request
            if not conn.started:
                await conn.send_json(500, {"error": {"message": f"{type(e).__name__}: {e}", "code": 500}})
        finally:
            conn.close()

    async def route(self, conn: Connection, raw: bytes) -> None:
        parts = [p for p in conn.path.split("/") if p]
        method = conn.method
        if parts == ["health"]:
            return await conn.send_json(200, {"ok": True, "runs": len(self.world.runs)})
        if parts == ["unattributed"]:
            return await conn.send_json(200, self.world.unattributed)
        if parts == ["runs"] and method == "POST":
            return await conn.send_json(200, self.create_run(_json(raw)))
        if len(parts) == 2 and parts[0] == "runs" and method == "DELETE":
            return await conn.send_json(200, self.delete_run(parts[1]))
        if len(parts) < 3 or parts[0] != "runs":
            self.world.record_unattributed(method, conn.path, "no such route")
            raise HTTPError(404, f"no route {method} {conn.path}")
        run = self.world.runs.get(parts[1])
        if run is None:
            self.world.record_unattributed(method, conn.path, "unknown run")
            raise HTTPError(404, f"unknown run {parts[1]!r}")
        rest = "/".join(parts[2:])
        try:
            await self.route_run(conn, run, method, rest, raw)
        except services.BadRequest as e:
            raise HTTPError(400, str(e)) from e
        except LookupError as e:
            raise HTTPError(404, str(e)) from e

    async def route_run(self, conn: Connection, run: Run, method: str, rest: str, raw: bytes) -> None:
        if method == "GET" and rest == "ledger":
            return await conn.send_json(200, {"run_id": run.run_id, "scenario": run.scenario.name,
                                              "anchor": run.anchor.text if run.anchor else None,
                                              "events": run.events})
        if method == "GET" and rest == "control":
            return await self.control(conn, run)
        if method == "GET" and rest == "quiet":
            return await conn.send_json(200, await self.quiet(run, conn.query()))
        if method == "GET" and rest == "effects":
            return await conn.send_json(200, services.lookup(run, conn.query()))
        if method == "GET" and rest == "v1/models":
            return await conn.send_json(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": 0, "owned_by": "stopbench"}]})
        if method != "POST":
            raise HTTPError(405, f"{method} /runs/{run.run_id}/{rest} is not supported")
        body = _json(raw)
        if rest == "marks":  # one mark, or a list of them (the trial batches what is not urgent)
            if isinstance(body, list):
                return await conn.send_json(200, [self.mark(run, m) for m in body])
            return await conn.send_json(200, self.mark(run, body))
        if rest == "processes":
            if not isinstance(body, dict) or not isinstance(body.get("pid"), int):
                raise HTTPError(400, "processes: body must be {\"pid\": int, \"role\": str}")
            run.record(Event.PROCESS_REGISTERED, pid=body["pid"], role=str(body.get("role", "")))
            return await conn.send_json(200, {"ok": True})
        if rest in ("v1/chat/completions", "v1/responses"):
            chat = rest.endswith("completions")
            body = _model_body("chat" if chat else "responses", body)
            api = model_api.chat_completions if chat else model_api.responses
            try:
                return await api(run, body, raw, conn)
            except model_api.InvalidRequest as e:
                raise HTTPError(400, str(e), e.body) from e
        if rest == "v1/messages":
            try:
                return await anthropic_api.messages(run, _model_body("anthropic", body), raw, conn)
            except model_api.InvalidRequest as e:
                raise HTTPError(400, str(e), e.body) from e
        version, _, path = rest.partition("/models/")
        model, _, method = path.rpartition(":")
        if version in gemini_api.API_VERSIONS and model and method in gemini_api.METHODS:
            try:
                return await gemini_api.generate_content(run, model, method, _model_body("gemini", body), raw, conn)
            except model_api.InvalidRequest as e:
                raise HTTPError(400, str(e), e.body) from e
        if rest in services.EFFECT_PATHS:
            return await conn.send_json(200, await services.effect(run, rest, body, conn))
        if rest in services.COMPENSATIONS:
            return await conn.send_json(200, await services.compensate(run, rest, body))
        if rest == "docs/draft":
            return await conn.send_json(200, await services.draft(run, body))
        self.world.record_unattributed(method, conn.path, "no such service")
        raise HTTPError(404, f"no service {rest!r}")

    def create_run(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise HTTPError(400, "POST /runs: body must be a JSON object with 'scenario'")
        spec = body.get("scenario")
        if not isinstance(spec, (str, dict)):
            raise HTTPError(400, "POST /runs: 'scenario' must be a scenario name or an inline scenario")
        seed = body.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise HTTPError(400, "POST /runs: 'seed' must be an integer")
        try:
            scenario = self.world.scenario(spec)
            anchor = body.get("stop_anchor")
            offset = None if anchor is None else Offset.from_data(anchor, "POST /runs: stop_anchor")
            billing = scenario.billing if body.get("billing") is None else \
                parse_billing(body["billing"], "POST /runs: billing")
        except (ScenarioError, BillingError) as e:
            raise HTTPError(400, str(e)) from e
        if offset is not None and not offset.is_event:
            raise HTTPError(400, f"POST /runs: stop_anchor {offset.text!r} is a time offset; the trial fires those")
        while len(self.world.runs) >= MAX_RUNS:  # a client that never deletes: the oldest run goes first
            self.world.runs.pop(next(iter(self.world.runs)))
        run_id = self.world.new_run_id()
        run = Run(run_id, scenario, seed, offset, time.monotonic_ns(), billing)
        self.world.runs[run_id] = run
        run.record(Event.RUN_CREATED, scenario=scenario.name, seed=seed, anchor=offset.text if offset else None,
                   billing=billing.name, model_rule=scenario.model_rule.name)
        base = f"{self.host_url}/runs/{run_id}"
        # the Anthropic and Gemini SDKs add their API's version to the base URL themselves
        return {"run_id": run_id, "model_base_url": f"{base}/v1", "services_base_url": base,
                "anthropic_base_url": base, "gemini_base_url": base}

    def delete_run(self, run_id: str) -> dict[str, Any]:
        """Forget a run whose row is written: a world serving thousands of trials keeps its memory flat.
        Whatever still arrives for it afterwards is listed as unattributed (bounded)."""
        run = self.world.runs.pop(run_id, None)
        if run is None:
            raise HTTPError(404, f"unknown run {run_id!r}")
        return {"deleted": run_id, "events": len(run.events)}

    def mark(self, run: Run, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise HTTPError(400, "marks: body must be {\"name\": str, \"t\": int?, \"data\": object?}")
        t = body.get("t")
        if t is not None and (not isinstance(t, int) or isinstance(t, bool)):
            raise HTTPError(400, "marks: 't' must be an integer of time.monotonic_ns()")
        entry = run.record(Event.MARK, t=t, name=body["name"], data=body.get("data"))
        return {"t": entry["t"]}

    async def control(self, conn: Connection, run: Run) -> None:
        queue: asyncio.Queue = asyncio.Queue()
        run.control_queues.append(queue)
        try:
            await conn.start_sse()
            await conn.send_body(b": open\n\n")
            if run.anchor_fired:  # the anchor happened before the listener came: say so at once
                queue.put_nowait({"event": "stop", "anchor": run.anchor.text, "late_listener": True})
            while not conn.disconnected:
                getter = asyncio.ensure_future(queue.get())
                gone = asyncio.ensure_future(conn.gone.wait())
                done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    gone.cancel()
                    break
                gone.cancel()
                msg = getter.result()
                await conn.send_body(f"event: {msg['event']}\ndata: {json.dumps(msg)}\n\n".encode())
        finally:
            run.control_queues.remove(queue)

    async def quiet(self, run: Run, query: dict[str, str]) -> dict[str, Any]:
        """Wait until nothing has happened for `window_ms` (at least that long from now) and nothing is
        in progress for the run, and not before `floor_ms` from now (the observation floor: a retry after
        a back-off shows nothing to the world while it waits, so quiet alone cannot see it coming).
        `deadline_ms` counts from the end of the floor. The window is at least PAUSE_MARGIN x the longest pause
        the run made between two of its actions before the stop (up to MAX_PAUSE_WINDOW_MS): quiet for less
        than a framework's own step time is not the end of its run. The answer says the window it used."""
        asked = time.monotonic_ns()
        try:
            window_ms, deadline_ms = float(query.get("window_ms", 300)), float(query.get("deadline_ms", 10000))
            floor_ms = float(query.get("floor_ms", 0))
        except ValueError as e:
            raise HTTPError(400, f"quiet: window_ms, deadline_ms and floor_ms must be numbers: {e}") from e
        for name, value in (("window_ms", window_ms), ("deadline_ms", deadline_ms), ("floor_ms", floor_ms)):
            if not 0 <= value <= MAX_QUIET_MS:  # also refuses nan and inf: a bounded wait, always
                raise HTTPError(400, f"quiet: {name} must be from 0 to {MAX_QUIET_MS:g}, got {query.get(name)!r}")
        # the scenario's window, stretched to cover the slowest step the run took before the stop
        window_ms = max(window_ms, min(PAUSE_MARGIN * run.longest_pause_ns / 1e6, MAX_PAUSE_WINDOW_MS))
        window, floor_end = window_ms * 1e6, asked + floor_ms * 1e6
        deadline = floor_end + deadline_ms * 1e6
        while True:
            now = time.monotonic_ns()
            # a full window from when we were asked: something set going just before must get to show up
            idle = now - max(run.last_activity_ns, asked)
            if now < floor_end:
                await asyncio.sleep(min((floor_end - now) / 1e9, 0.05))
                continue
            if run.open_requests == 0 and idle >= window:
                return {"quiet": True, "last_activity_ns": run.last_activity_ns, "waited_until": now,
                        "window_ms": round(window_ms, 3)}
            if now >= deadline:
                return {"quiet": False, "last_activity_ns": run.last_activity_ns,
                        "open_requests": run.open_requests, "waited_until": now, "window_ms": round(window_ms, 3)}
            await asyncio.sleep(min(max((window - idle) / 1e9, 0.002), 0.05))

