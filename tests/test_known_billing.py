"""Known answers for what a stop costs on each model wire under each billing profile, and for a retry after a
529 in the anthropic SDK's back-off: planted clients (tests/known_answer/providers.py) against the world, the
row's fields computed from the ledger by the metrics, every number exact."""

from __future__ import annotations

import threading
from typing import Any

import anthropic
import httpx
import pytest

from harness.billing import parse_billing
from harness.results.metrics import compute
from harness.scenario import parse_offset, scenario_from_dict
from tests.known_answer.providers import ROUTES, StopPresser, anthropic_client, read_then_leave

TEXT_TOKENS, READ = 10, 3
#: one token every 100 ms: a client that leaves at the stop is gone long before the next token is due, and an
#: engine that runs on for 250 ms after that generates exactly the two tokens due 100 and 200 ms later
PACING = {"tokens_per_s": 10, "ttft_ms": 0}
#: billing profile -> tokens billed after the stop (all of them unread) when the client leaves after READ tokens
BILLED_AFTER_STOP = {"stops_at_disconnect": 0, "runs_to_completion": TEXT_TOKENS - READ, "runs_on_ms:250": 2}


def answer(billing: str | None = None) -> dict[str, Any]:
    scenario = {"name": "one_answer", "turns": [{"text_tokens": TEXT_TOKENS}], "offsets": [], "pacing": PACING}
    return scenario if billing is None else {**scenario, "billing": billing}


def row_after_stop(world_client, run: dict[str, Any], scenario: dict[str, Any], anchor: str) -> dict[str, Any]:
    assert world_client.quiet(run["run_id"], window_ms=150, deadline_ms=10_000)["quiet"]
    events = world_client.ledger(run["run_id"])["events"]
    return {**compute(events, scenario_from_dict(scenario), parse_offset(anchor)), "events": events}


def leave_at_the_stop(world_client, route: str, scenario: dict[str, Any]) -> dict[str, Any]:
    """The client reads READ tokens; the stop is anchored at the READ-th; the client leaves once it is pressed."""
    anchor = f"on:token:{READ}"
    run = world_client.create_run(scenario, stop_anchor=parse_offset(anchor))
    with StopPresser(run) as presser:
        assert read_then_leave(route, run, READ, presser.stopped) == READ
    return row_after_stop(world_client, run, scenario, anchor)


@pytest.mark.parametrize("profile", list(BILLED_AFTER_STOP))
@pytest.mark.parametrize("route", ROUTES)
def test_tokens_billed_after_a_stop_under_each_profile(world_client, route, profile):
    row = leave_at_the_stop(world_client, route, answer(profile))
    billed = BILLED_AFTER_STOP[profile]
    assert row["billing_profile"] == profile
    assert (row["tokens_after_stop"], row["tokens_unread_after_stop"], row["llm_requests_after_stop"]) == (
        billed, billed, 0)
    assert row["tokens_total"] == READ + billed
    events = row["events"]
    assert [(e["req"], e["api"], e["stream"]) for e in events if e["event"] == "llm_request"] == [(1, route, True)]
    assert [e["tokens"] for e in events if e["event"] == "disconnect"] == [READ]
    done = [e for e in events if e["event"] == "response_done"]
    assert [(d["tokens"], d["complete"], d.get("unread", 0)) for d in done] == [(READ + billed, False, billed)]
    tokens = [e for e in events if e["event"] == "token"]
    assert [(e["i"], bool(e.get("unread"))) for e in tokens] == [(i, i >= READ) for i in range(READ + billed)]
    assert row["lie_ms"] is None  # no button returned: the provider's billing is not the run going on


def test_the_profile_of_a_run_overrides_the_scenarios(world, world_client):
    """`POST /runs` `billing` wins over the scenario's; the ledger's run_created says which one the run used."""
    r = httpx.post(f"{world.url}/runs", json={"scenario": answer("runs_to_completion"),
                                              "stop_anchor": parse_offset(f"on:token:{READ}").to_data(),
                                              "billing": "runs_on_ms:250"})
    assert r.status_code == 200, r.text
    run = r.json()
    with StopPresser(run) as presser:
        read_then_leave("anthropic", run, READ, presser.stopped)
    row = row_after_stop(world_client, run, answer("runs_to_completion"), f"on:token:{READ}")
    assert (row["billing_profile"], row["tokens_after_stop"]) == ("runs_on_ms:250", 2)
    assert row["events"][0]["billing"] == "runs_on_ms:250"


@pytest.mark.parametrize("billing,message", [
    ("runs_forever", "POST /runs: billing: expected stops_at_disconnect, runs_to_completion or runs_on_ms:N"),
    ("runs_on_ms:-5", "POST /runs: billing: expected"),
    ({"runs_on_ms": 700_000}, "POST /runs: billing: expected"),
])
def test_an_unknown_profile_is_refused_by_name(world, billing, message):
    r = httpx.post(f"{world.url}/runs", json={"scenario": answer(), "billing": billing})
    assert r.status_code == 400 and r.json()["error"]["message"].startswith(message)


def test_a_scenario_names_its_profile_and_a_bad_one_names_the_field():
    assert scenario_from_dict(answer()).billing == parse_billing("stops_at_disconnect")
    assert scenario_from_dict(answer("runs_to_completion")).billing.runs_on_ms is None
    assert scenario_from_dict({**answer(), "billing": {"runs_on_ms": 300}}).billing.name == "runs_on_ms:300"
    with pytest.raises(ValueError, match=r"^s\.yaml\.billing: expected"):
        scenario_from_dict(answer("sometimes"), source="s.yaml")


def test_a_non_streamed_answer_is_billed_in_full_whatever_the_profile(world_client):
    """The client of a plain answer never tells the provider it left: all of it is generated, under every
    profile, as before profiles existed."""
    run = world_client.create_run(answer("stops_at_disconnect"))
    with pytest.raises(anthropic.APITimeoutError):
        anthropic_client(run, timeout=0.15).messages.create(
            model="claude-scripted", max_tokens=64, messages=[{"role": "user", "content": "go"}])
    row = row_after_stop(world_client, run, answer("stops_at_disconnect"), "on:token:1")
    assert row["tokens_total"] == TEXT_TOKENS
    assert [(d["tokens"], d["complete"]) for d in row["events"] if d["event"] == "response_done"] == [
        (TEXT_TOKENS, True)]


def test_a_retry_after_a_529_in_the_anthropic_sdks_back_off_is_seen(world_client):
    """anthropic-python at its defaults (2 retries, its own back-off from 0.375 s) gets a 529 overloaded_error;
    the stop is anchored at that error and pressed at once, inside the back-off. The retry leaves after the stop,
    is answered (faults are served only before the stop), and the ledger bills it to the run."""
    text = 5
    scenario = {"name": "overloaded_once", "turns": [{"text_tokens": text, "fault": {"status": 529}}],
                "offsets": []}
    run = world_client.create_run(scenario, stop_anchor=parse_offset("on:llm_error:1"))
    answered: list[Any] = []
    with StopPresser(run):
        client = anthropic.Anthropic(base_url=run["anthropic_base_url"], api_key="x")  # its default retries
        thread = threading.Thread(target=lambda: answered.append(client.messages.create(
            model="claude-scripted", max_tokens=64, messages=[{"role": "user", "content": "go"}])))
        thread.start()
        thread.join(20)
    row = row_after_stop(world_client, run, scenario, "on:llm_error:1")
    assert (row["llm_errors"], row["llm_requests_after_stop"], row["tokens_after_stop"]) == (1, 1, text)
    assert answered[0].usage.output_tokens == text
    events = row["events"]
    names = [(e["event"], e.get("req", e.get("name"))) for e in events if e["event"] != "token"]
    assert names[:5] == [("run_created", None), ("llm_request", 1), ("llm_error", 1), ("anchor_fired", None),
                         ("mark", "stop_called")]
    assert ("llm_request", 2) in names[5:] and ("response_done", 2) in names[5:]
    error = next(e for e in events if e["event"] == "llm_error")
    assert (error["kind"], error["status"]) == ("server_error", 529)
    retry = next(e for e in events if e["event"] == "llm_request" and e["req"] == 2)
    assert retry["t"] - error["t"] >= 0.375e9  # the SDK's shortest first back-off: 0.5 s less its 25 % jitter
