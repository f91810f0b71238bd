"""The world, driven over real HTTP (openai client, httpx, the Toolbox), with the ledger asserted exactly."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import openai
import pytest

from harness.scenario import ScenarioError, parse_offset, resolve_scenario, scenario_from_dict
from harness.tools.toolbox import Toolbox
from harness.vocabulary import Event, Mark
from harness.world.ledger import Run
from harness.world.model_api import PACE_SLACK, Piece, generate, plan_answer, tokens_per_turn

EMAIL = {"to": "a@example.com", "subject": "Hi", "body": "Hello."}


def inline(name: str = "inline", text_tokens: int = 20, tps: float = 0, ttft: float = 0,
           latency: dict[str, float] | None = None, **extra: Any) -> dict[str, Any]:
    """A small inline scenario: one text turn, given pacing and service latency."""
    return {"name": name, "turns": [{"text_tokens": text_tokens}], "offsets": [],
            "pacing": {"tokens_per_s": tps, "ttft_ms": ttft}, "latency_ms": latency or {}, **extra}


def events(world_client, run_id: str, name: str | None = None, **match: Any) -> list[dict[str, Any]]:
    evs = world_client.ledger(run_id)["events"]
    return [e for e in evs if (name is None or e["event"] == name)
            and all(e.get(k) == v for k, v in match.items())]


def settle(world_client, run_id: str, window_ms: float = 40) -> None:
    assert world_client.quiet(run_id, window_ms=window_ms, deadline_ms=5000)["quiet"]


def client_for(run: dict[str, Any]) -> openai.OpenAI:
    return openai.OpenAI(base_url=run["model_base_url"], api_key="x", max_retries=0, timeout=20)


def chat_messages(tool_results: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(tool_results):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "send_email", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": "ok"})
    return msgs


def responses_input(tool_results: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(tool_results):
        items.append({"type": "function_call", "call_id": f"c{k}", "name": "send_email", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{k}", "output": "ok"})
    return items


def only_request(world_client, run_id: str) -> dict[str, Any]:
    reqs = events(world_client, run_id, "llm_request")
    assert len(reqs) == 1
    return reqs[0]


def token_stamps(world_client, run_id: str, req: int) -> list[int]:
    toks = events(world_client, run_id, "token", req=req)
    assert [e["i"] for e in toks] == list(range(len(toks)))
    return [e["t"] for e in toks]


# ----- model API: Chat Completions and Responses -----------------------------------------------------

def run_chat(oc: openai.OpenAI, tool_results: int, stream: bool, usage: bool = False):
    """One chat call; returns (text, [(name, args)], usage or None, saw a usage chunk)."""
    msgs = chat_messages(tool_results)
    if not stream:
        r = oc.chat.completions.create(model="scripted", messages=msgs)
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in r.choices[0].message.tool_calls or []]
        return r.choices[0].message.content or "", calls, r.usage, False
    kwargs: dict[str, Any] = {"stream_options": {"include_usage": True}} if usage else {}
    text, calls, got_usage, usage_chunk = [], {}, None, False
    for chunk in oc.chat.completions.create(model="scripted", messages=msgs, stream=True, **kwargs):
        if chunk.usage is not None:
            assert chunk.choices == []
            got_usage, usage_chunk = chunk.usage, True
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            for tc in choice.delta.tool_calls or []:
                entry = calls.setdefault(tc.index, ["", ""])
                entry[0] += tc.function.name or ""
                entry[1] += tc.function.arguments or ""
    return "".join(text), [(n, json.loads(a)) for _, (n, a) in sorted(calls.items())], got_usage, usage_chunk


def run_responses(oc: openai.OpenAI, tool_results: int, stream: bool):
    inp = responses_input(tool_results)
    if not stream:
        r = oc.responses.create(model="scripted", input=inp)
    else:
        r = None
        text_deltas = []
        for ev in oc.responses.create(model="scripted", input=inp, stream=True):
            if ev.type == "response.output_text.delta":
                text_deltas.append(ev.delta)
            if ev.type == "response.completed":
                r = ev.response
        assert r is not None
        assert "".join(text_deltas) == r.output_text
    calls = [(o.name, json.loads(o.arguments)) for o in r.output if o.type == "function_call"]
    return r.output_text, calls, r.usage


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("scenario,tool_results", [("q3_report", 0), ("q3_report", 1), ("q3_report", 2),
                                                   ("parallel_fanout", 0), ("parallel_fanout", 3)])
def test_model_turns(world_client, api, stream, scenario, tool_results):
    sc = resolve_scenario(scenario)
    run = world_client.create_run(scenario)
    oc = client_for(run)
    if api == "chat":
        text, calls, usage, _ = run_chat(oc, tool_results, stream, usage=stream)
        completion = usage.completion_tokens
    else:
        text, calls, usage = run_responses(oc, tool_results, stream)
        completion = usage.output_tokens
    settle(world_client, run["run_id"])
    turn = sc.turn_for(tool_results)
    req = only_request(world_client, run["run_id"])
    assert req["turn"] == turn and req["tool_results"] == tool_results and req["stream"] == stream
    assert req["api"] == api
    n = tokens_per_turn(sc)[turn]
    assert len(token_stamps(world_client, run["run_id"], req["req"])) == n
    assert completion == n
    done = events(world_client, run["run_id"], "response_done")
    assert [(d["req"], d["tokens"], d["complete"]) for d in done] == [(req["req"], n, True)]
    expected = sc.turns[turn]
    assert calls == [(c.name, c.arguments) for c in expected.tool_calls]
    assert len(text.split()) == expected.text_tokens
    assert events(world_client, run["run_id"], "disconnect") == []


def test_parallel_fanout_three_calls_in_one_turn(world_client):
    run = world_client.create_run("parallel_fanout")
    oc = client_for(run)
    names = ["send_email", "book_meeting", "post_chat"]
    for stream in (False, True):
        _, calls, _, _ = run_chat(oc, 0, stream)
        assert [c[0] for c in calls] == names
        _, calls, _ = run_responses(oc, 0, stream)
        assert [c[0] for c in calls] == names


def test_chat_stream_usage_chunk_only_when_asked(world_client):
    run = world_client.create_run(inline(text_tokens=7))
    oc = client_for(run)
    text, _, usage, usage_chunk = run_chat(oc, 0, stream=True, usage=True)
    assert usage_chunk and usage.completion_tokens == 7 and len(text.split()) == 7
    _, _, usage, usage_chunk = run_chat(oc, 0, stream=True, usage=False)
    assert not usage_chunk and usage is None


def test_responses_previous_response_id_counts_earlier_results(world_client):
    sc = resolve_scenario("q3_report")
    run = world_client.create_run("q3_report")
    oc = client_for(run)
    first = oc.responses.create(model="scripted", input=responses_input(1))
    (call,) = [o for o in first.output if o.type == "function_call"]
    assert call.name == "send_email"
    second = oc.responses.create(model="scripted", previous_response_id=first.id,
                                 input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sent"}])
    assert [o for o in second.output if o.type == "function_call"] == []
    reqs = events(world_client, run["run_id"], "llm_request")
    assert [(r["turn"], r["tool_results"]) for r in reqs] == [(1, 1), (2, 2)]
    assert second.usage.output_tokens == tokens_per_turn(sc)[2]


def test_a_responses_call_of_a_tool_offered_in_a_namespace_names_its_namespace(world_client):
    """Codex CLI offers MCP tools inside a `namespace` tool and routes a call by the namespace it names: the call of
    such a tool carries it, streamed or not; a tool offered plainly carries none."""
    run = world_client.create_run("q3_report")
    email = {"type": "function", "name": "send_email", "parameters": {"type": "object", "properties": {}}}
    offered = {"namespaced": [{"type": "namespace", "name": "mcp__world", "description": "the world's MCP tools",
                               "tools": [email]}], "plain": [email]}
    for how, tools in offered.items():
        for stream in (False, True):
            body = {"model": "scripted", "stream": stream, "tools": tools, "input": responses_input(1)}
            r = httpx.post(f"{run['model_base_url']}/responses", json=body, timeout=30)
            if stream:
                done = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
                items = [d["item"] for d in done if d["type"] == "response.output_item.done"]
            else:
                items = r.json()["output"]
            (call,) = [i for i in items if i["type"] == "function_call"]
            assert (call["name"], call.get("namespace")) == \
                ("send_email", "mcp__world" if how == "namespaced" else None), (how, stream)


def test_responses_refuses_what_the_real_api_refuses_after_a_previous_response(world_client):
    """As the Responses API: continuing from a response that asked for a function call needs that call's
    output (400 "No tool output found for function call ..."), and an unknown previous_response_id is a 400."""
    import openai

    run = world_client.create_run("q3_report")
    oc = client_for(run)
    first = oc.responses.create(model="scripted", input=responses_input(1))
    with pytest.raises(openai.BadRequestError, match="No tool output found for function call"):
        oc.responses.create(model="scripted", previous_response_id=first.id, input="go on")
    with pytest.raises(openai.BadRequestError, match="Previous response with id 'resp_nope' not found"):
        oc.responses.create(model="scripted", previous_response_id="resp_nope", input="go on")
    assert len(events(world_client, run["run_id"], "llm_request")) == 1  # refused before any model work


def test_past_the_script_says_done(world_client):
    run = world_client.create_run(inline(text_tokens=3))
    r = client_for(run).chat.completions.create(model="scripted", messages=chat_messages(1))
    assert r.choices[0].message.content == "Done." and r.usage.completion_tokens == 1


# ----- token stamps and pacing -----------------------------------------------------------------------

def test_token_stamps_increase_unpaced(world_client):
    run = world_client.create_run(inline(text_tokens=300))
    r = client_for(run).chat.completions.create(model="scripted", messages=chat_messages(0))
    assert r.usage.completion_tokens == 300
    stamps = token_stamps(world_client, run["run_id"], 1)
    assert len(stamps) == 300
    assert all(b > a for a, b in zip(stamps, stamps[1:], strict=False))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_pacing_spaces_tokens(world_client, stream):
    """What the world decided, not how fast the machine was: no token before its slot (ttft after the request,
    then one interval apart), and no two tokens closer than (1 - PACE_SLACK) intervals."""
    rate, ttft, n = 200.0, 20.0, 30
    run = world_client.create_run(inline(text_tokens=n, tps=rate, ttft=ttft))
    run_chat(client_for(run), 0, stream)
    req = only_request(world_client, run["run_id"])
    stamps = token_stamps(world_client, run["run_id"], 1)
    assert len(stamps) == n
    interval = int(1e9 / rate)
    assert stamps[0] - req["t"] >= ttft * 1e6
    schedule = [req["t"] + ttft * 1e6 + i * interval for i in range(n)]
    assert all(t >= slot for t, slot in zip(stamps, schedule, strict=True))
    assert min(b - a for a, b in zip(stamps, stamps[1:], strict=False)) >= (1 - PACE_SLACK) * interval


def _generate_in_process(scenario: dict[str, Any], anchor: str | None, stall: dict[int, float],
                         press_after_s: float = 0.0) -> list[dict[str, Any]]:
    """Run the world's generator in this process, the machine stalling the world's loop for `stall[i]`
    seconds right after token i went out (the seam: a blocking emit), the stop pressed `press_after_s` after
    the anchor. Returns the run's events."""
    sc = scenario_from_dict(scenario)
    run = Run("r-seam", sc, 0, parse_offset(anchor) if anchor else None, time.monotonic_ns())

    async def emit(i: int, piece: Piece) -> None:
        if i in stall:
            time.sleep(stall[i])  # blocks the loop, as a loaded machine does

    async def main() -> None:
        loop = asyncio.get_running_loop()
        original = run.fire_anchor

        def fire() -> None:
            original()
            loop.call_later(press_after_s, lambda: run.record(Event.MARK, name=Mark.STOP_CALLED))

        run.fire_anchor = fire  # type: ignore[method-assign]
        await generate(run, 1, plan_answer(sc, 0, run.run_id, 0), emit, None)

    asyncio.run(main())
    return run.events


def test_a_late_token_is_sent_late_and_the_next_a_full_interval_after_it():
    """A stall of 5 intervals after token 3: token 4 goes out late, and the rest at the pace from it, never
    four or five at once to catch up with the schedule (a burst would count as tokens after a stop)."""
    interval = int(1e9 / 100)
    evs = _generate_in_process(inline(text_tokens=12, tps=100), None, {3: 0.05})
    stamps = [e["t"] for e in evs if e["event"] == "token"]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert len(stamps) == 12 and gaps[3] >= 50e6
    assert min(gaps) >= (1 - PACE_SLACK) * interval, [g / 1e6 for g in gaps]
    # right after the stall the schedule moved to the late token: the next one is a full interval after it (the one
    # after that is on that schedule again, which a loaded machine may send up to PACE_SLACK of an interval late)
    assert gaps[4] >= interval, [g / 1e6 for g in gaps]


def test_a_token_hold_and_a_stall_after_it_send_no_burst():
    """Held at on:token:4 for 20 intervals, then stalled after the next token: every gap stays a token's."""
    interval = int(1e9 / 100)
    evs = _generate_in_process(inline(text_tokens=15, tps=100), "on:token:4", {6: 0.04}, press_after_s=0.2)
    names = [e["event"] for e in evs]
    assert names.count("anchor_fired") == 1 and names.count("anchor_released") == 1
    released = next(e["t"] for e in evs if e["event"] == "anchor_released")
    stamps = [e["t"] for e in evs if e["event"] == "token"]
    assert sum(t > released for t in stamps) == 11
    assert min(b - a for a, b in zip(stamps, stamps[1:], strict=False)) >= (1 - PACE_SLACK) * interval


# ----- disconnects ------------------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["chat", "responses"])
def test_stream_disconnect_stops_generation(world_client, api):
    k, full = 5, 400
    run = world_client.create_run(inline(text_tokens=full, tps=200, ttft=5))
    oc = client_for(run)
    seen = 0
    if api == "chat":
        stream = oc.chat.completions.create(model="scripted", messages=chat_messages(0), stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                seen += 1
                if seen == k:
                    break
    else:
        stream = oc.responses.create(model="scripted", input=responses_input(0), stream=True)
        for ev in stream:
            if ev.type == "response.output_text.delta":
                seen += 1
                if seen == k:
                    break
    stream.close()
    settle(world_client, run["run_id"])
    n = len(token_stamps(world_client, run["run_id"], 1))
    assert k <= n <= k + 3 < full
    disc = events(world_client, run["run_id"], "disconnect")
    assert len(disc) == 1 and disc[0]["req"] == 1 and disc[0]["tokens"] == n
    done = events(world_client, run["run_id"], "response_done")
    assert len(done) == 1 and done[0]["tokens"] == n and done[0]["complete"] is False
    assert done[0]["t"] >= disc[0]["t"] > token_stamps(world_client, run["run_id"], 1)[-1]


def test_non_streaming_generates_in_full_after_client_timeout(world_client):
    n = 30
    run = world_client.create_run(inline(text_tokens=n, tps=300, ttft=10))  # ~110 ms
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=0.03) as http:
        http.post(f"{run['model_base_url']}/chat/completions",
                  json={"model": "scripted", "messages": chat_messages(0)})
    assert len(events(world_client, run["run_id"], "token")) < n  # the client left mid-generation
    settle(world_client, run["run_id"])
    assert len(token_stamps(world_client, run["run_id"], 1)) == n
    assert events(world_client, run["run_id"], "disconnect") == []
    done = events(world_client, run["run_id"], "response_done")
    assert [(d["tokens"], d["complete"]) for d in done] == [(n, True)]


# ----- services ---------------------------------------------------------------------------------------

def post(url: str, body: Any, timeout: float = 10, **kwargs: Any) -> httpx.Response:
    with httpx.Client(timeout=timeout) as http:
        return http.post(url, json=body, **kwargs)


def test_email_received_then_committed_after_latency(world_client):
    run = world_client.create_run(inline(latency={"email": 60}))
    r = post(f"{run['services_base_url']}/email/send", EMAIL)
    assert r.status_code == 200
    answer = r.json()
    assert answer["effect_id"] == "email_1" and answer["status"] == "committed"
    rec = events(world_client, run["run_id"], "effect_received")
    com = events(world_client, run["run_id"], "effect_committed")
    assert len(rec) == 1 and len(com) == 1
    assert rec[0]["kind"] == "email" and rec[0]["effect_id"] == "email_1" and rec[0]["idempotency_key"] is None
    assert com[0]["effect_id"] == "email_1" and com[0]["client_gone"] is False
    assert com[0]["logical"] == rec[0]["logical"]
    assert answer["committed_ns"] == com[0]["t"]
    assert 60e6 <= com[0]["t"] - rec[0]["t"] < 60e6 + 50e6


@pytest.mark.parametrize("commit_on_disconnect", [True, False])
def test_effect_when_client_disconnects_before_commit(world_client, commit_on_disconnect):
    run = world_client.create_run(inline(latency={"email": 150}, commit_on_disconnect=commit_on_disconnect))
    with pytest.raises(httpx.ReadTimeout):
        post(f"{run['services_base_url']}/email/send", EMAIL, timeout=0.03)
    assert len(events(world_client, run["run_id"], "effect_received")) == 1
    assert events(world_client, run["run_id"], "effect_committed") == []
    settle(world_client, run["run_id"])
    com = events(world_client, run["run_id"], "effect_committed")
    abo = events(world_client, run["run_id"], "effect_aborted")
    if commit_on_disconnect:
        assert abo == [] and len(com) == 1
        assert com[0]["effect_id"] == "email_1" and com[0]["client_gone"] is True
    else:
        assert com == [] and len(abo) == 1 and abo[0]["effect_id"] == "email_1"


def test_idempotency_key_repeat_is_a_duplicate(world_client):
    run = world_client.create_run(inline(latency={"email": 10}))
    url = f"{run['services_base_url']}/email/send"
    first = post(url, EMAIL, headers={"Idempotency-Key": "k1"}).json()
    again = post(url, EMAIL, headers={"Idempotency-Key": "k1"}).json()
    other = post(url, EMAIL, headers={"Idempotency-Key": "k2"}).json()
    assert first["effect_id"] == again["effect_id"] == "email_1" and other["effect_id"] == "email_2"
    settle(world_client, run["run_id"])
    evs = [e for e in world_client.ledger(run["run_id"])["events"] if e["event"].startswith("effect_")]
    assert [(e["event"], e["effect_id"]) for e in evs] == [
        ("effect_received", "email_1"), ("effect_committed", "email_1"), ("effect_duplicate", "email_1"),
        ("effect_received", "email_2"), ("effect_committed", "email_2")]
    assert evs[2]["idempotency_key"] == "k1" and evs[3]["idempotency_key"] == "k2"


def test_idempotency_keys_are_scoped_to_their_service(world_client):
    """An email's key sent to pr/open opens a PR: it is not answered with the email (#13 item 9)."""
    run = world_client.create_run(inline(latency={"email": 10, "pr": 10}))
    base = run["services_base_url"]
    email = post(f"{base}/email/send", EMAIL, headers={"Idempotency-Key": "shared"}).json()
    pr = post(f"{base}/pr/open", {"title": "T", "branch": "b"}, headers={"Idempotency-Key": "shared"}).json()
    assert email["effect_id"] == "email_1" and pr["effect_id"] == "pr_1" and pr["kind"] == "pr"
    settle(world_client, run["run_id"])
    assert not events(world_client, run["run_id"], "effect_duplicate")
    ambiguous = httpx.get(f"{base}/effects", params={"idempotency_key": "shared"})
    assert ambiguous.status_code == 400 and "give &kind=" in ambiguous.text
    found = httpx.get(f"{base}/effects", params={"idempotency_key": "shared", "kind": "pr"}).json()
    assert found["effect_id"] == "pr_1"
    recalled = post(f"{base}/email/recall", {"idempotency_key": "shared"}).json()
    assert recalled["effect_id"] == "email_1"


def test_effect_lookup_by_idempotency_key(world_client):
    """What a saga asks about a call whose answer never came back; a read, not a ledger event."""
    run = world_client.create_run(inline(latency={"email": 10}))
    base = run["services_base_url"]
    post(f"{base}/email/send", EMAIL, headers={"Idempotency-Key": "k1"})
    before = len(world_client.ledger(run["run_id"])["events"])
    found = httpx.get(f"{base}/effects", params={"idempotency_key": "k1"})
    (committed,) = events(world_client, run["run_id"], "effect_committed")
    assert found.status_code == 200
    assert found.json() == {"effect_id": "email_1", "kind": "email", "status": "committed",
                            "committed_ns": committed["t"]}
    assert len(world_client.ledger(run["run_id"])["events"]) == before
    missing = httpx.get(f"{base}/effects", params={"idempotency_key": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]
    assert httpx.get(f"{base}/effects").status_code == 400


def test_compensation_and_unknown_effect(world_client):
    run = world_client.create_run(inline())
    base = run["services_base_url"]
    eid = post(f"{base}/email/send", EMAIL).json()["effect_id"]
    r = post(f"{base}/email/recall", {"effect_id": eid})
    assert r.status_code == 200 and r.json() == {"effect_id": eid, "kind": "email", "status": "compensated"}
    comp = events(world_client, run["run_id"], "compensation")
    assert [(c["kind"], c["effect_id"], c["committed"]) for c in comp] == [("email", eid, True)]
    r = post(f"{base}/email/recall", {"effect_id": "email_99"})
    assert r.status_code == 404 and "email_99" in r.json()["error"]["message"]
    r = post(f"{base}/pr/close", {"effect_id": eid})  # right id, wrong kind
    assert r.status_code == 404
    r = post(f"{base}/email/recall", {})
    assert r.status_code == 400 and "effect_id" in r.json()["error"]["message"]
    assert len(events(world_client, run["run_id"], "compensation")) == 1


def test_service_bad_arguments(world_client):
    run = world_client.create_run(inline())
    r = post(f"{run['services_base_url']}/email/send", {"to": "a@example.com"})
    assert r.status_code == 400
    msg = r.json()["error"]["message"]
    assert "subject" in msg and "body" in msg
    assert events(world_client, run["run_id"], "effect_received") == []


def test_toolbox_sync_and_async(world_client):
    run = world_client.create_run(inline(latency={"email": 5, "chat": 5, "docs": 5}))
    seen: list[tuple[str, dict]] = []
    tb = Toolbox(run["services_base_url"], on_result=lambda name, args, answer: seen.append((name, answer)))
    out = json.loads(tb.sync["send_email"]("a@example.com", subject="S", body="B"))
    assert out["effect_id"] == "email_1" and out["status"] == "committed"
    out = json.loads(asyncio.run(tb.async_["post_chat"](channel="#c", text="t")))
    assert out["effect_id"] == "chat_1" and out["status"] == "committed"
    draft = json.loads(tb.sync["draft_document"](title="T", topic="X"))
    assert draft["title"] == "T" and "X" in draft["text"]
    assert [n for n, _ in seen] == ["send_email", "post_chat", "draft_document"]
    assert tb.compensate("email", "email_1")["status"] == "compensated"
    assert asyncio.run(tb.acompensate("chat", "chat_1"))["status"] == "compensated"
    evs = [(e["event"], e.get("effect_id") or e.get("kind")) for e in world_client.ledger(run["run_id"])["events"]
           if e["event"] not in ("run_created",)]
    assert evs == [("effect_received", "email_1"), ("effect_committed", "email_1"),
                   ("effect_received", "chat_1"), ("effect_committed", "chat_1"), ("read", "docs"),
                   ("compensation", "email_1"), ("compensation", "chat_1")]
    with pytest.raises(TypeError):
        tb.sync["send_email"]("a@example.com")


# ----- bad input -------------------------------------------------------------------------------------

def test_bad_input_never_kills_the_world(world):
    url = world.url
    with httpx.Client(timeout=5) as http:
        r = http.post(f"{url}/runs/r99999/v1/chat/completions", json={"messages": []})
        assert r.status_code == 404 and "r99999" in r.json()["error"]["message"]
        un = http.get(f"{url}/unattributed").json()
        assert any(u["path"] == "/runs/r99999/v1/chat/completions" and u["reason"] == "unknown run" for u in un)

        r = http.post(f"{url}/runs", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]

        r = http.post(f"{url}/runs", json={"scenario": "no_such_scenario"})
        assert r.status_code == 400 and "no_such_scenario" in r.json()["error"]["message"]

        bad = inline()
        bad["turns"] = [{"text_tokens": "many"}]
        r = http.post(f"{url}/runs", json={"scenario": bad})
        assert r.status_code == 400 and "text_tokens" in r.json()["error"]["message"]

        r = http.post(f"{url}/runs", json={"scenario": {**inline(), "pacing": {"tokens_per_s": "fast"}}})
        assert r.status_code == 400 and "pacing.tokens_per_s" in r.json()["error"]["message"]

        r = http.post(f"{url}/runs", json={"scenario": {**inline(), "speed": 3}})
        assert r.status_code == 400 and "speed" in r.json()["error"]["message"]

        r = http.post(f"{url}/runs", json={"scenario": inline(), "stop_anchor": parse_offset("at:100ms").to_data()})
        assert r.status_code == 400 and "time offset" in r.json()["error"]["message"]

        # the anchor comes as data, never as text for the world to parse
        r = http.post(f"{url}/runs", json={"scenario": inline(), "stop_anchor": "on:token:3"})
        assert r.status_code == 400 and "Offset.to_data" in r.json()["error"]["message"]

        bad_event = {"text": "x", "event": "tokens", "n": 3}
        r = http.post(f"{url}/runs", json={"scenario": inline(), "stop_anchor": bad_event})
        assert r.status_code == 400 and "stop_anchor.event" in r.json()["error"]["message"]

        run = http.post(f"{url}/runs", json={"scenario": inline()}).json()
        r = http.post(f"{run['model_base_url']}/chat/completions", content=b"[1,",
                      headers={"content-type": "application/json"})
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        r = http.post(f"{run['model_base_url']}/chat/completions", json=[1, 2])
        assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
        r = http.post(f"{run['services_base_url']}/rocket/launch", json={})
        assert r.status_code == 404 and "rocket/launch" in r.json()["error"]["message"]
        r = http.post(f"{run['services_base_url']}/marks", json={"name": "x", "t": "soon"})
        assert r.status_code == 400 and "'t'" in r.json()["error"]["message"]
        r = http.get(f"{run['services_base_url']}/quiet", params={"window_ms": "abc"})
        assert r.status_code == 400 and "window_ms" in r.json()["error"]["message"]

        assert http.get(f"{url}/health").json()["ok"] is True


# ----- event anchors and the control channel ---------------------------------------------------------

class ControlListener:
    """Reads a run's control stream in a thread; `opened` once connected, `stops` gets each stop push."""

    def __init__(self, run: dict[str, Any], press_stop: bool = True, press_after_s: float = 0.0):
        self.press_after_s = press_after_s  # a slow trial: the stop is pressed this long after the push
        self.url = f"{run['services_base_url']}/control"
        self.marks_url = f"{run['services_base_url']}/marks"
        self.press_stop = press_stop  # post stop_called on the push, as a trial does
        self.opened = threading.Event()
        self.stopped = threading.Event()
        self.stops: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> ControlListener:
        self.thread.start()
        assert self.opened.wait(5), "control stream did not open"
        return self

    def __exit__(self, *exc) -> None:
        self.thread.join(10)
        assert not self.thread.is_alive()

    def _read(self) -> None:
        with httpx.stream("GET", self.url, timeout=httpx.Timeout(5, read=8)) as r:
            assert r.headers["content-type"] == "text/event-stream"
            event = None
            for line in r.iter_lines():
                if line.startswith(": open"):
                    self.opened.set()
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "stop":
                    self.stops.append({**json.loads(line[6:]), "received_ns": time.monotonic_ns()})
                    if self.press_stop:
                        time.sleep(self.press_after_s)
                        httpx.post(self.marks_url, json={"name": "stop_called", "t": time.monotonic_ns()})
                    self.stopped.set()
                    return


def test_anchor_on_token_pushes_stop(world_client):
    run = world_client.create_run(inline(text_tokens=20), stop_anchor=parse_offset("on:token:5"))
    with ControlListener(run) as ctl:
        client_for(run).chat.completions.create(model="scripted", messages=chat_messages(0))
        assert ctl.stopped.wait(5)
    evs = world_client.ledger(run["run_id"])["events"]
    assert world_client.ledger(run["run_id"])["anchor"] == "on:token:5"
    fired = [j for j, e in enumerate(evs) if e["event"] == "anchor_fired"]
    assert len(fired) == 1
    before = evs[fired[0] - 1]
    assert before["event"] == "token" and before["i"] == 4
    assert ctl.stops == [{"event": "stop", "anchor": "on:token:5", "t": evs[fired[0]]["t"],
                          "received_ns": ctl.stops[0]["received_ns"]}]
    assert ctl.stops[0]["received_ns"] > evs[fired[0]]["t"]
    # the world froze after the anchored token until the stop was pressed; generation then went on
    released = next(j for j, e in enumerate(evs) if e["event"] == "anchor_released")
    stop = next(j for j, e in enumerate(evs) if e["event"] == "mark" and e["name"] == "stop_called")
    assert [e["event"] for e in evs[fired[0] + 1:released]] in (["mark"], [])
    assert stop < released and evs[released].get("timeout") is None
    assert [e["i"] for e in evs if e["event"] == "token"] == list(range(20))


def test_token_hold_freezes_the_stream_not_its_clock(world_client):
    """A stream held at on:token:N resumes at its pace after the stop: the tokens whose turn fell in the
    hold are not sent in a burst after the stop (they would count as tokens after the stop, growing with
    how long the trial took to press it). Asserted on the world's stamps, which it spaces itself."""
    interval = int(1e9 / 100)
    run = world_client.create_run(inline(text_tokens=30, tps=100), stop_anchor=parse_offset("on:token:5"))
    with ControlListener(run, press_after_s=0.2) as ctl:  # a hold of 20 token slots
        client_for(run).chat.completions.create(model="scripted", messages=chat_messages(0))
        assert ctl.stopped.wait(5)
    evs = world_client.ledger(run["run_id"])["events"]
    released = next(e["t"] for e in evs if e["event"] == "anchor_released")
    stamps = [e["t"] for e in evs if e["event"] == "token"]
    after = [t for t in stamps if t > released]
    assert len(stamps) == 30 and len(after) == 25
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert min(gaps) >= (1 - PACE_SLACK) * interval, [g / 1e6 for g in gaps]  # a burst: gaps of microseconds
    assert after[-1] - after[0] >= 24 * (1 - PACE_SLACK) * interval


def test_late_listener_gets_stop_at_once(world_client):
    run = world_client.create_run(inline(text_tokens=3), stop_anchor=parse_offset("on:llm_request:1"))
    request = threading.Thread(target=lambda: client_for(run).chat.completions.create(
        model="scripted", messages=chat_messages(0)))
    request.start()  # held by the world at the anchor until the (late) trial presses stop
    while not events(world_client, run["run_id"], "anchor_fired"):
        time.sleep(0.01)
    with ControlListener(run) as ctl:
        assert ctl.stopped.wait(5)
    request.join(5)
    assert not request.is_alive()
    assert ctl.stops[0]["late_listener"] is True and ctl.stops[0]["anchor"] == "on:llm_request:1"


def test_anchor_on_nth_llm_request(world_client):
    run = world_client.create_run(inline(text_tokens=3), stop_anchor=parse_offset("on:llm_request:2"))
    oc = client_for(run)
    with ControlListener(run) as ctl:
        oc.chat.completions.create(model="scripted", messages=chat_messages(0))
        settle(world_client, run["run_id"], window_ms=20)
        assert events(world_client, run["run_id"], "anchor_fired") == [] and not ctl.stopped.is_set()
        oc.chat.completions.create(model="scripted", messages=chat_messages(0))
        assert ctl.stopped.wait(5)
    evs = world_client.ledger(run["run_id"])["events"]
    j = next(j for j, e in enumerate(evs) if e["event"] == "anchor_fired")
    assert evs[j - 1]["event"] == "llm_request" and evs[j - 1]["req"] == 2
    assert len(events(world_client, run["run_id"], "anchor_fired")) == 1


def test_anchor_on_effect_received_holds_commit_until_stop_called(world_client):
    run = world_client.create_run(inline(latency={"email": 20}), stop_anchor=parse_offset("on:effect_received:email"))
    answers: list[dict] = []
    with ControlListener(run, press_stop=False) as ctl:
        sender = threading.Thread(target=lambda: answers.append(
            post(f"{run['services_base_url']}/email/send", EMAIL).json()))
        sender.start()
        assert ctl.stopped.wait(5)
        time.sleep(0.15)  # far beyond the 20 ms latency: the commit is held
        assert events(world_client, run["run_id"], "effect_committed") == []
        assert sender.is_alive()
        stop_t = world_client.mark(run["run_id"], "stop_called")
        sender.join(5)
    assert answers and answers[0]["status"] == "committed"
    evs = world_client.ledger(run["run_id"])["events"]
    names = [e["event"] for e in evs]
    assert names == ["run_created", "effect_received", "anchor_fired", "mark", "anchor_released", "effect_committed"]
    mark, released, committed = evs[3], evs[4], evs[5]
    assert mark["name"] == "stop_called" and mark["t"] == stop_t
    assert released.get("timeout") is None
    assert committed["t"] > stop_t and committed["t"] - released["t"] >= 20e6
    assert evs[2]["t"] >= evs[1]["t"]


# ----- marks and quiet -------------------------------------------------------------------------------

def test_marks_with_explicit_t(world_client):
    run = world_client.create_run(inline())
    t = time.monotonic_ns() - 1_000_000
    assert world_client.mark(run["run_id"], "stop_pressed", t=t, data={"x": 1}) == t
    r = post(f"{run['services_base_url']}/marks", {"name": "no_t"})
    assert r.status_code == 200
    marks = events(world_client, run["run_id"], "mark")
    assert marks[0] == {"t": t, "event": "mark", "name": "stop_pressed", "data": {"x": 1}}
    assert marks[1]["name"] == "no_t" and marks[1]["t"] == r.json()["t"] > t and marks[1]["data"] is None


def test_quiet_after_activity_stops(world_client):
    """A request the world holds open (at its anchor, until the stop) is in progress: not quiet, whatever the
    machine's speed; once it is answered, quiet comes a full window after its last event."""
    run = world_client.create_run(inline(text_tokens=40, tps=400), stop_anchor=parse_offset("on:token:5"))
    th = threading.Thread(target=lambda: client_for(run).chat.completions.create(
        model="scripted", messages=chat_messages(0)))
    th.start()
    deadline = time.monotonic() + 5
    while not events(world_client, run["run_id"], "anchor_fired") and time.monotonic() < deadline:
        time.sleep(0.005)
    busy = world_client.quiet(run["run_id"], window_ms=50, deadline_ms=30)
    assert busy["quiet"] is False and busy["open_requests"] == 1
    world_client.mark(run["run_id"], "stop_called")
    q = world_client.quiet(run["run_id"], window_ms=50, deadline_ms=5000)
    th.join(5)
    assert q["quiet"] is True
    last = events(world_client, run["run_id"], "response_done")[-1]
    assert last["complete"] is True and len(events(world_client, run["run_id"], "token")) == 40
    assert q["last_activity_ns"] == last["t"]
    assert q["waited_until"] - last["t"] >= 50e6


def test_registered_process_is_recorded(world_client):
    run = world_client.create_run(inline())
    assert post(f"{run['services_base_url']}/processes", {"pid": 4242, "role": "agent"}).status_code == 200
    assert post(f"{run['services_base_url']}/processes", {"pid": "x"}).status_code == 400
    assert [(e["pid"], e["role"]) for e in events(world_client, run["run_id"], "process_registered")] == [
        (4242, "agent")]


def test_inline_scenario_roundtrip(world_client):
    spec = inline(text_tokens=4)
    assert tokens_per_turn(scenario_from_dict(spec)) == [4]
    run = world_client.create_run(spec, seed=3)
    led = world_client.ledger(run["run_id"])
    assert led["scenario"] == "inline" and led["anchor"] is None
    assert led["events"][0]["event"] == "run_created" and led["events"][0]["seed"] == 3


@pytest.mark.parametrize("name", ["/etc/passwd", "../data/prices", "x" * 10_000, "Q3", "", "a/b"])
def test_scenario_names_are_names_never_paths(world_client, name):
    """#13 item 2: a name outside [a-z0-9_]{1,64} is refused before any file is touched; nothing leaks."""
    r = httpx.post(f"{world_client.url}/runs", json={"scenario": name})
    assert r.status_code == 400 and "scenario name" in r.text
    assert "output_tokens_per_1k" not in r.text  # data/prices.yaml's fields


def test_bad_input_is_4xx_never_5xx(world_client):
    """#13 item 3."""
    base = world_client.url
    run = world_client.create_run("q3_report")
    model = run["model_base_url"]
    assert httpx.post(f"{base}/runs", content=b"{" + b" " * (9 << 20) + b"}",
                      headers={"content-type": "application/json"}).status_code == 413
    assert httpx.post(f"{base}/runs", content=b"[" * 100_000).status_code == 400
    for body in ({"messages": 1}, {"messages": None, "stream_options": 3}, None, {"input": 5}):
        api = "chat/completions" if body is None or "messages" in body else "responses"
        r = httpx.post(f"{model}/{api}", json=body)
        assert r.status_code == 400, (api, body, r.text)
    for query in ({"window_ms": "nan"}, {"window_ms": "inf", "deadline_ms": "inf"}, {"deadline_ms": "-1"}):
        r = httpx.get(f"{run['services_base_url']}/quiet", params=query)
        assert r.status_code == 400 and "must be from 0 to" in r.text, query


def test_what_the_world_keeps_is_bounded(world_client):
    """#13 item 4: requests for unknown runs are kept up to a limit, cut short; a huge inline scenario is refused."""
    from harness.world.ledger import MAX_UNATTRIBUTED

    with httpx.Client() as client:
        for i in range(MAX_UNATTRIBUTED + 20):
            client.get(f"{world_client.url}/runs/{'x' * 2000}{i}/ledger")
    kept = httpx.get(f"{world_client.url}/unattributed").json()
    assert len(kept) == MAX_UNATTRIBUTED and max(len(u["path"]) for u in kept) == 200
    huge = {"name": "huge", "turns": [{"text_tokens": 200_000}], "offsets": []}
    r = httpx.post(f"{world_client.url}/runs", json={"scenario": huge})
    assert r.status_code == 400 and "text_tokens: expected an integer from 0 to 20000" in r.text


def test_effect_received_records_the_send_stamp(world_client):
    """Issue #11 case 7: the tools' send time reaches the ledger as `sent_t`; anything else is not recorded."""
    from harness.tools.loopback_http import post_json
    from harness.vocabulary import SENT_HEADER

    run = world_client.create_run(inline(latency={"email": 0}))
    url = f"{run['services_base_url']}/email/send"
    before = time.monotonic_ns()
    Toolbox(run["services_base_url"]).sync["send_email"]("a@example.com", subject="S", body="B")  # httpx, sync
    asyncio.run(Toolbox(run["services_base_url"]).async_["send_email"]("a@example.com", subject="S", body="B"))
    mcp = Toolbox(run["services_base_url"], apost=post_json)  # as the MCP server makes its toolbox
    asyncio.run(mcp.async_["send_email"]("a@example.com", subject="S", body="B"))
    for raw in ("soon", "-5", "1.5", str(time.monotonic_ns() + 10**12)):  # garbage, or later than the receipt
        assert httpx.post(url, json=EMAIL, headers={SENT_HEADER: raw}).status_code == 200
    assert httpx.post(url, json=EMAIL).status_code == 200  # a client that is not the harness
    received = events(world_client, run["run_id"], "effect_received")
    assert len(received) == 8
    for e in received[:3]:
        assert before <= e["sent_t"] <= e["t"], e
    assert ["sent_t" in e for e in received[3:]] == [False] * 5


# ----- provider faults ----------------------------------------------------------------------------------

def faulty(fault: Any, text_tokens: int = 8, **extra: Any) -> dict[str, Any]:
    """One text turn whose first request(s) get `fault`."""
    return {"name": "faulty", "turns": [{"text_tokens": text_tokens, "fault": fault}], "offsets": [], **extra}


def call_model(oc: openai.OpenAI, api: str, stream: bool) -> int:
    """One request; returns the text tokens the client read."""
    if api == "chat":
        got = oc.chat.completions.create(model="scripted", messages=chat_messages(0), stream=stream)
        if not stream:
            return len(got.choices[0].message.content.split())
        return sum(1 for c in got if c.choices and c.choices[0].delta.content)
    got = oc.responses.create(model="scripted", input=responses_input(0), stream=stream)
    if not stream:
        return len(got.output_text.split())
    return sum(1 for ev in got if ev.type == "response.output_text.delta")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("fault,error,status,kind,code", [
    ({"status": 429, "retry_after_s": 1}, openai.RateLimitError, 429, "requests", "rate_limit_exceeded"),
    ({"status": 500}, openai.InternalServerError, 500, "server_error", None),
    ({"status": 503}, openai.InternalServerError, 503, "server_error", None),
])
def test_http_fault_in_openai_error_format_then_the_real_answer(world_client, api, stream, fault, error, status,
                                                                  kind, code):
    run = world_client.create_run(faulty(fault))
    oc = client_for(run)  # no retries: each request is the test's
    with pytest.raises(error) as raised:
        call_model(oc, api, stream)
    err = raised.value
    assert err.status_code == status and err.type == kind and err.code == code
    assert err.response.headers.get("retry-after") == (None if "retry_after_s" not in fault else "1")
    assert err.body["param"] is None and err.body["message"]
    assert call_model(oc, api, stream) == 8  # the fault did not consume the turn
    evs = world_client.ledger(run["run_id"])["events"]
    errors = [e for e in evs if e["event"] == "llm_error"]
    want = {"req": 1, "kind": "rate_limit" if status == 429 else "server_error", "n": 1, "status": status,
            "retry_after_s": fault.get("retry_after_s")}
    assert [{k: e[k] for k in want} for e in errors] == [want]
    assert [(e["req"], e["turn"]) for e in evs if e["event"] == "llm_request"] == [(1, 0), (2, 0)]
    assert {e["req"] for e in evs if e["event"] == "token"} == {2}
    assert [(e["req"], e["complete"]) for e in evs if e["event"] == "response_done"] == [(2, True)]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_reset_drops_the_response_after_n_tokens(world_client, api, stream):
    """The connection is closed after 5 generated tokens, without the rest or the terminating chunk; the
    client reads a connection error (streamed: after the 5 deltas)."""
    run = world_client.create_run(faulty({"reset_after_tokens": 5}, text_tokens=20))
    oc = client_for(run)
    read = []

    def consume() -> None:
        if api == "chat":
            got = oc.chat.completions.create(model="scripted", messages=chat_messages(0), stream=stream)
            read.extend(c for c in (got if stream else []) if c.choices and c.choices[0].delta.content)
        else:
            got = oc.responses.create(model="scripted", input=responses_input(0), stream=stream)
            read.extend(ev for ev in (got if stream else []) if ev.type == "response.output_text.delta")

    with pytest.raises(openai.APIConnectionError):
        consume()
    assert len(read) == (5 if stream else 0)
    assert call_model(oc, api, stream) == 20
    settle(world_client, run["run_id"])
    evs = world_client.ledger(run["run_id"])["events"]
    assert [(e["req"], e["kind"], e["n"], e["tokens"]) for e in evs if e["event"] == "llm_error"] == [
        (1, "reset", 1, 5)]
    assert [(e["req"], e["tokens"], e["complete"]) for e in evs if e["event"] == "response_done"] == [
        (1, 5, False), (2, 20, True)]
    assert [e["req"] for e in evs if e["event"] == "token"] == [1] * 5 + [2] * 20
    assert [e for e in evs if e["event"] == "disconnect"] == []  # the world left, not the client


def test_faults_are_served_in_order_and_default_retries_complete_the_turn(world_client):
    """A list of faults goes to the turn's first requests in order; openai-python at its default retries
    waits out the Retry-After and gets the answer."""
    run = world_client.create_run(faulty([{"status": 500}, {"status": 429, "retry_after_s": 1}]))
    oc = openai.OpenAI(base_url=run["model_base_url"], api_key="x", timeout=20)  # max_retries: its default, 2
    assert len(oc.chat.completions.create(model="scripted", messages=chat_messages(0)).choices[0]
               .message.content.split()) == 8
    evs = world_client.ledger(run["run_id"])["events"]
    errors = [e for e in evs if e["event"] == "llm_error"]
    assert [(e["req"], e["status"], e["n"]) for e in errors] == [(1, 500, 1), (2, 429, 2)]
    third = next(e for e in evs if e["event"] == "llm_request" and e["req"] == 3)
    assert third["t"] - errors[1]["t"] >= 1e9  # the client's wait, as the header asked


def test_anchor_on_llm_error_fires_after_the_fault_and_holds_the_retry_until_stop(world_client):
    run = world_client.create_run(faulty([{"status": 500}, {"status": 429}]),
                                  stop_anchor=parse_offset("on:llm_error:2"))
    oc = client_for(run)
    with ControlListener(run, press_after_s=0.2) as ctl:
        for _ in range(2):
            with pytest.raises(openai.APIStatusError):
                call_model(oc, "chat", False)
        assert call_model(oc, "chat", True) == 8  # at once: held by the world until the stop
        assert ctl.stopped.wait(5)
    evs = world_client.ledger(run["run_id"])["events"]
    names = [(e["event"], e.get("req", e.get("name"))) for e in evs]
    assert names[:8] == [("run_created", None), ("llm_request", 1), ("llm_error", 1), ("llm_request", 2),
                         ("llm_error", 2), ("anchor_fired", None), ("llm_request", 3), ("mark", "stop_called")]
    assert names[8][0] == "anchor_released" and evs[8].get("timeout") is None
    assert ctl.stops[0]["anchor"] == "on:llm_error:2"
    stop = evs[7]["t"]
    assert [e["t"] > stop for e in evs if e["event"] == "token"] == [True] * 8


@pytest.mark.parametrize("fault,field", [
    ({"status": 404}, "fault.status: expected 429 or a 5xx"),
    ({"status": 429, "reset_after_tokens": 3}, "fault: a fault is either"),
    ({}, "fault: expected a mapping"),
    ({"status": 500, "retry_after_s": 1.5}, "fault.retry_after_s: expected whole seconds"),
    ({"status": 500, "retry_after_s": 61}, "fault.retry_after_s: expected whole seconds"),
    ({"reset_after_tokens": 3, "retry_after_s": 1}, "fault.retry_after_s: only an HTTP error"),
    ({"reset_after_tokens": -1}, "fault.reset_after_tokens: expected an integer"),
    ({"status": 500, "after": 2}, "fault: unknown field 'after'"),
    ([{"status": 500}, "boom"], "fault[1]: expected a mapping"),
])
def test_fault_schema_errors_name_the_file_and_field(fault, field):
    with pytest.raises(ScenarioError) as raised:
        scenario_from_dict(faulty(fault), source="f.yaml")
    assert str(raised.value).startswith(f"f.yaml.turns[0].{field}"), str(raised.value)


def test_flaky_provider_scripts_each_fault_once():
    sc = resolve_scenario("flaky_provider")
    assert [[(f.kind, f.status, f.retry_after_s, f.reset_after_tokens) for f in t.faults] for t in sc.turns] == [
        [("rate_limit", 429, 1, None)], [("server_error", 500, None, None)], [("reset", None, None, 5)]]
    assert [o.text for o in sc.offsets] == ["on:llm_error:1", "on:llm_error:2", "on:llm_error:3", "at:600ms"]
    assert parse_offset("on:llm_error:3").to_data() == {"text": "on:llm_error:3", "at_ms": None,
                                                        "event": "llm_error", "effect": None, "n": 3}


@pytest.mark.parametrize(("marks", "released_by"), [
    ([("stop_called", None)], "stop_called"),  # an adapter in the subject: released where it was pressed
    ([("stop_called", {"hold_until_handled": True}), ("stop_handled", None)], "stop_handled"),
    ([("stop_called", {"hold_until_handled": True}), ("stop_returned", None)], "stop_returned"),  # no stamp came
])
def test_the_world_holds_at_the_anchor_until_the_stop_reached_the_app(marks, released_by):
    import asyncio
    import time

    from harness.scenario import load_scenarios, parse_offset
    from harness.vocabulary import Event
    from harness.world.ledger import Run

    run = Run("r-hold", load_scenarios()["long_answer"], 0, parse_offset("on:token:100"), time.monotonic_ns())

    async def main() -> list[str]:
        held = asyncio.ensure_future(run.hold_for_stop("token after req 1"))
        still_held = []
        for name, data in marks:
            for _ in range(5):
                await asyncio.sleep(0)
            if not held.done():
                still_held.append(name)
            run.record(Event.MARK, name=name, data=data)
        await asyncio.wait_for(held, 1)
        return still_held

    assert asyncio.run(main()) == [name for name, _ in marks]  # held until the last one, released by it
    (released,) = [e for e in run.events if e["event"] == Event.ANCHOR_RELEASED]
    assert "timeout" not in released
    assert [e["name"] for e in run.events if e["event"] == Event.MARK][-1] == released_by
