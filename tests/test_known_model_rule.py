"""The model reads results: a resume that records the interrupted call as "Tool was interrupted." repeats the email
when the model asks for the call again (`retry_interrupted_tools`, the default), and not when it only counts
results (`count_results`). The planted adapter (tests/known_answer/interrupted.py) runs for real against the world.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from harness.model_rule import ToolResult, reads_as_failed
from harness.results.report import write_report
from harness.scenario import DEFAULT_SCENARIOS_DIR, ScenarioError, load_scenarios, scenario_from_dict
from tests.test_trials import run

KI = "tests.known_answer.interrupted:RepairsInterruptedCall"


def scenarios_under(rule: str, tmp_path: Path) -> Path:
    """q3_report as shipped, its model told `rule`."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    data = yaml.safe_load((DEFAULT_SCENARIOS_DIR / "q3_report.yaml").read_text())
    (folder / "q3_report.yaml").write_text(yaml.safe_dump({**data, "model_rule": rule}))
    return folder


def test_under_the_default_rule_the_model_asks_for_the_interrupted_email_again_and_resume_sends_it_twice(tmp_path):
    assert load_scenarios()["q3_report"].model_rule.name == "retry_interrupted_tools"
    (row,) = run(KI, tmp_path, offsets=["on:effect_received:email"])
    assert row["status"] == "ok", row["reason"]
    assert row["model_rule"] == "retry_interrupted_tools"
    assert row["model_retries"] == 1
    assert row["effects_committed_total"] == 2
    assert row["resume_duplicate_effects"] == 1
    assert row["retry_duplicate_effects"] == 0
    assert row["resume_ok"] is True
    assert row["resume_llm_requests"] == 2  # the call asked again, then the final answer
    write_report(tmp_path, tmp_path)
    readme = " ".join((tmp_path / "README.md").read_text().split())
    assert ("- model rule = the world's model read a tool result that reports an interruption or an error under "
            "`retry_interrupted_tools` (every row): a tool result that reads as interrupted") in readme


def test_a_model_that_counts_results_goes_on_and_the_email_is_sent_once(tmp_path):
    shutil.rmtree(tmp_path / "scenarios", ignore_errors=True)
    (row,) = run(KI, tmp_path / "out", offsets=["on:effect_received:email"],
                 scenarios_dir=scenarios_under("count_results", tmp_path))
    assert row["status"] == "ok", row["reason"]
    assert row["model_rule"] == "count_results"
    assert row["model_retries"] == 0
    assert row["effects_committed_total"] == 1
    assert row["resume_duplicate_effects"] == 0
    assert row["resume_ok"] is True
    assert row["resume_llm_requests"] == 1


def test_a_bad_model_rule_names_the_file_and_the_field(tmp_path):
    folder = scenarios_under("always_retry", tmp_path)
    with pytest.raises(ScenarioError, match=r"q3_report\.yaml\.model_rule: 'always_retry' is not a model rule "
                                            r"\(known: retry_interrupted_tools, count_results\)"):
        load_scenarios(folder)
    r = subprocess.run([sys.executable, "-m", "harness.cli", "list", "--scenarios", str(folder)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and f"{folder / 'q3_report.yaml'}.model_rule: 'always_retry' is not a model rule" \
        in r.stderr
    with pytest.raises(ScenarioError, match=r"<inline>\.model_rule: 3 is not a model rule"):
        scenario_from_dict({**yaml.safe_load((folder / "q3_report.yaml").read_text()), "model_rule": 3})


# ----- the predicate and the wires, against the world ------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Tool was interrupted.",  # Strands' session repair
    "The tool call was interrupted before a result was produced.",  # pydantic-ai
    "Error: Missing tool result (tool execution may have been interrupted before a response was recorded).",  # adk
    "Tool execution cancelled",  # openai-agents
    "Error: Tool call was cancelled.",  # agent-framework
    "tool call aborted: stop",  # agno
    "Error: ConnectionError('boom')\n Please fix your mistakes.",  # LangGraph's ToolNode
    "An error occurred while running the tool. Please try again.",  # openai-agents' default
    "stopbench: not sent, stop was pressed before this call left",  # the harness's NOT_SENT
])
def test_results_that_report_an_interruption_or_an_error_read_as_failed(text):
    assert reads_as_failed(ToolResult("c", text))


@pytest.mark.parametrize("text", [
    '{"effect_id": "e1", "kind": "email", "status": "committed", "committed_ns": 12}',
    '{"title": "Q3 report", "text": "the quarter closed with revenue up"}',
    "meta=None content=[TextContent(type='text', text='{\"effect_id\": \"e1\"}')] isError=False",
    '{"result": "ok", "error": null}',
])
def test_results_of_calls_that_worked_do_not(text):
    assert not reads_as_failed(ToolResult("c", text))


def _q3(rule: str) -> dict:
    return {**yaml.safe_load((DEFAULT_SCENARIOS_DIR / "q3_report.yaml").read_text()), "name": "q3_rule",
            "offsets": [], "pacing": {}, "model_rule": rule}


def _chat(run: dict, messages: list) -> dict:
    r = httpx.post(f"{run['model_base_url']}/chat/completions", json={"model": "m", "messages": messages}, timeout=30)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]


def _chat_job(run: dict, second_result: str) -> list[dict]:
    """Turn 0 answered ok, turn 1's email answered with `second_result`: the messages so far."""
    messages: list[dict] = [{"role": "user", "content": "Do the Q3 job."}]
    for result in ("ok", second_result):
        message = _chat(run, messages)
        messages += [message, *({"role": "tool", "tool_call_id": c["id"], "content": result}
                                for c in message["tool_calls"])]
    return messages


def test_chat_a_result_that_reads_as_interrupted_gets_the_same_call_again_once(world_client):
    run = world_client.create_run(_q3("retry_interrupted_tools"))
    rid = run["run_id"]
    messages = _chat_job(run, "Tool was interrupted.")
    again = _chat(run, [*messages, {"role": "user", "content": "Continue where you stopped."}])
    (call,) = again["tool_calls"]
    assert (call["id"], call["function"]["name"]) == (f"call_{rid}_1_0_again", "send_email")
    assert json.loads(call["function"]["arguments"])["to"] == "board@example.com"
    messages += [again, {"role": "tool", "tool_call_id": call["id"], "content": "sent"}]
    final = _chat(run, messages)
    assert final["content"] and not final.get("tool_calls")
    events = world_client.ledger(rid)["events"]
    asked = [e for e in events if e["event"] == "tool_retry_asked"]
    assert [(e["call_id"], e["retry_id"], e["tool"], e["result"]) for e in asked] == [
        (f"call_{rid}_1_0", f"call_{rid}_1_0_again", "send_email", "Tool was interrupted.")]
    requests = [e for e in events if e["event"] == "llm_request"]
    assert [(e["turn"], e["tool_results"], e.get("asked_again")) for e in requests] == [
        (0, 0, None), (1, 1, None), (2, 2, [f"call_{rid}_1_0_again"]), (2, 2, None)]


def test_chat_under_count_results_the_model_goes_on_whatever_the_result_says(world_client):
    run = world_client.create_run(_q3("count_results"))
    final = _chat(run, _chat_job(run, "Tool was interrupted."))
    assert final["content"] and not final.get("tool_calls")
    assert not [e for e in world_client.ledger(run["run_id"])["events"] if e["event"] == "tool_retry_asked"]


def test_a_result_that_worked_is_not_asked_again(world_client):
    run = world_client.create_run(_q3("retry_interrupted_tools"))
    final = _chat(run, _chat_job(run, '{"effect_id": "e1", "kind": "email", "status": "committed"}'))
    assert final["content"] and not final.get("tool_calls")


def test_anthropic_is_error_and_gemini_error_are_read_as_failed(world_client):
    run = world_client.create_run(_q3("retry_interrupted_tools"))
    rid, url = run["run_id"], run["anthropic_base_url"]
    messages: list[dict] = [{"role": "user", "content": "Do the Q3 job."}]
    for content, is_error in (("ok", False), ("boom", True)):
        answer = httpx.post(f"{url}/v1/messages", json={"model": "c", "max_tokens": 100, "messages": messages},
                            timeout=30).json()
        uses = [b for b in answer["content"] if b["type"] == "tool_use"]
        messages += [{"role": "assistant", "content": answer["content"]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": content,
                                                   "is_error": is_error} for b in uses]}]
    answer = httpx.post(f"{url}/v1/messages", json={"model": "c", "max_tokens": 100, "messages": messages},
                        timeout=30).json()
    assert [(b["type"], b["id"]) for b in answer["content"]] == [("tool_use", f"call_{rid}_1_0_again")]

    run = world_client.create_run(_q3("retry_interrupted_tools"))
    rid, url = run["run_id"], f"{run['gemini_base_url']}/v1beta/models/g:generateContent"
    contents: list[dict] = [{"role": "user", "parts": [{"text": "Do the Q3 job."}]}]
    for response in ({"output": "ok"}, {"error": "interrupted by the user"}):
        parts = httpx.post(url, json={"contents": contents}, timeout=30).json()["candidates"][0]["content"]["parts"]
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        contents += [{"role": "model", "parts": parts},
                     {"role": "user", "parts": [{"functionResponse": {"id": c["id"], "name": c["name"],
                                                                      "response": response}} for c in calls]}]
    parts = httpx.post(url, json={"contents": contents}, timeout=30).json()["candidates"][0]["content"]["parts"]
    assert [p["functionCall"]["id"] for p in parts if "functionCall" in p] == [f"call_{rid}_1_0_again"]


def test_responses_continuing_from_a_previous_response_count_the_retry_apart(world_client):
    run = world_client.create_run(_q3("retry_interrupted_tools"))
    rid, url = run["run_id"], f"{run['model_base_url']}/responses"
    body: dict = {"model": "m", "input": "Do the Q3 job."}
    outputs = iter(["ok", "Tool execution cancelled", "sent"])
    names = []
    for _ in range(4):
        answer = httpx.post(url, json=body, timeout=30).json()
        calls = [i for i in answer["output"] if i["type"] == "function_call"]
        names.append([c["call_id"] for c in calls] or "text")
        body = {"model": "m", "previous_response_id": answer["id"],
                "input": [{"type": "function_call_output", "call_id": c["call_id"], "output": next(outputs)}
                          for c in calls]}
    assert names == [[f"call_{rid}_0_0"], [f"call_{rid}_1_0"], [f"call_{rid}_1_0_again"], "text"]
