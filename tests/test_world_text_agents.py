"""The world and an agent that keeps its tool calls as text (smolagents' ToolCallingAgent), over raw HTTP.

Such an agent sends a call back as assistant text ("Calling tools: [...]", with the world's call ids) and its
result as a user message ("Observation: ..."), never as a `role: "tool"` message; it asks every turn with
`tool_choice: "required"` and ends only with a call of its own `final_answer` tool. The requests below are shaped
as smolagents 1.26 sends them (captured from its OpenAIServerModel). Known answers: q3_report's turns (0: 6 words
and a draft_document call, 1: a send_email call, 2: 60 words) and its call ids `call_<run_id>_<turn>_<n>`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from harness.tools.catalogue import openai_tool_definitions

FINAL_ANSWER = {"type": "function", "function": {
    "name": "final_answer", "description": "Provides a final answer to the given problem.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string",
                                                               "description": "The final answer to the problem"}},
                   "required": ["answer"]}}}
DRAFT = {"title": "Q3 report", "topic": "Q3 results"}
EMAIL = {"to": "board@example.com", "subject": "Q3 report", "body": "Please find the Q3 report attached."}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": content}]}


def calling_tools(call_id: str, name: str, arguments: dict[str, Any]) -> str:
    """smolagents' memory: `"Calling tools:\\n" + str([tc.dict() for tc in self.tool_calls])`."""
    return "Calling tools:\n" + str([{"id": call_id, "type": "function",
                                      "function": {"name": name, "arguments": arguments}}])


def smolagents_body(run_id: str, steps: int, *, extra_ids: tuple[str, ...] = (), stream: bool = False,
                    tools: list[dict[str, Any]] | None = None, tool_choice: str | None = "required") -> dict[str, Any]:
    """The request of a ToolCallingAgent that has done `steps` of q3_report's tool steps (each echoed as text with
    the id the world gave it), plus assistant text echoing `extra_ids`."""
    done = [("draft_document", DRAFT, '{"title": "Q3 report", "text": "Draft about Q3 results: numbers are in."}'),
            ("send_email", EMAIL, '{"effect_id": "email_1", "kind": "email", "status": "sent"}')][:steps]
    messages = [text("system", "You are an expert assistant who can solve any task using tool calls."),
                text("user", "New task:\nDraft the Q3 report, send it to board@example.com and give me a summary.")]
    for turn, (name, args, result) in enumerate(done):
        messages.append(text("assistant", calling_tools(f"call_{run_id}_{turn}_0", name, args)))
        messages.append(text("user", f"Observation:\n{result}"))
    for call_id in extra_ids:
        messages.append(text("assistant", calling_tools(call_id, "final_answer", {"answer": "the quarter"})))
        messages.append(text("user", "Observation:\nthe quarter"))
    body: dict[str, Any] = {"model": "scripted", "messages": messages, "stop": ["Observation:", "Calling tools:"],
                            "tools": openai_tool_definitions() + [FINAL_ANSWER] if tools is None else tools}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


def post_chat(run: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(timeout=20) as http:
        r = http.post(f"{run['model_base_url']}/chat/completions", json=body)
    r.raise_for_status()
    return r.json()


def stream_chat(run: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every SSE chunk of a streamed answer, parsed."""
    chunks = []
    with httpx.Client(timeout=20) as http, \
            http.stream("POST", f"{run['model_base_url']}/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[len("data: "):]))
    return chunks


def requests_of(world_client, run_id: str) -> list[tuple[int, int, int]]:
    """(req, turn, tool_results) of each model request of the run."""
    evs = world_client.ledger(run_id)["events"]
    return [(e["req"], e["turn"], e["tool_results"]) for e in evs if e["event"] == "llm_request"]


def tokens_of(world_client, run_id: str, req: int) -> int:
    return sum(1 for e in world_client.ledger(run_id)["events"] if e["event"] == "token" and e["req"] == req)


def the_call(answer: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    (call,) = answer["choices"][0]["message"]["tool_calls"]
    return call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])


def test_a_text_echoing_agent_walks_the_script_and_ends_with_its_final_answer_tool(world_client):
    """Each step's echoed call id counts as its result, and the scripted last turn (60 words) comes as the one
    final_answer call, its answer the same 60 words, 60 tokens generated and billed, as the text would be."""
    run = world_client.create_run("q3_report")
    rid = run["run_id"]
    first, second, last = (post_chat(run, smolagents_body(rid, steps)) for steps in (0, 1, 2))
    assert the_call(first)[:2] == (f"call_{rid}_0_0", "draft_document")
    assert the_call(first)[2] == DRAFT
    assert the_call(second)[:2] == (f"call_{rid}_1_0", "send_email")
    assert requests_of(world_client, rid) == [(1, 0, 0), (2, 1, 1), (3, 2, 2)]

    call_id, name, args = the_call(last)
    assert (call_id, name) == (f"call_{rid}_2_answer", "final_answer")
    assert len(args["answer"].split(" ")) == 60
    assert last["choices"][0]["message"]["content"] is None
    assert last["choices"][0]["finish_reason"] == "tool_calls"
    assert last["usage"]["completion_tokens"] == 60 and tokens_of(world_client, rid, 3) == 60

    # the same turn asked as plain text (no final_answer offered) says the same words in as many tokens
    plain = post_chat(run, smolagents_body(rid, 2, tools=openai_tool_definitions()))
    assert plain["choices"][0]["message"]["content"] == args["answer"]
    assert plain["usage"]["completion_tokens"] == 60 and tokens_of(world_client, rid, 4) == 60


def test_the_final_answer_call_streams_one_delta_per_token(world_client):
    """Streamed: 60 chunks carry the call (the first with its id and name), one per token, the arguments they add
    up to are {"answer": <the 60 words>}, and the usage chunk says 60."""
    run = world_client.create_run("q3_report")
    rid = run["run_id"]
    chunks = stream_chat(run, smolagents_body(rid, 2, stream=True))
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    calls = [d["tool_calls"][0] for d in deltas if d.get("tool_calls")]
    assert len(calls) == 60 and tokens_of(world_client, rid, 1) == 60
    assert (calls[0]["id"], calls[0]["function"]["name"]) == (f"call_{rid}_2_answer", "final_answer")
    assert all("id" not in c for c in calls[1:])
    args = json.loads("".join(c["function"]["arguments"] for c in calls))
    assert list(args) == ["answer"] and len(args["answer"].split(" ")) == 60
    assert not any(d.get("content") for d in deltas)
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["usage"]["completion_tokens"] == 60
    assert requests_of(world_client, rid) == [(1, 2, 2)]


def test_only_this_runs_scripted_call_ids_count(world_client):
    """A resumed agent's memory also echoes its final_answer call: that id is not a scripted call's and does not
    count (the resume is asked turn 2 again, as an agent with tool messages is); another run's ids count nothing."""
    run, other = world_client.create_run("q3_report"), world_client.create_run("q3_report")
    rid = run["run_id"]
    post_chat(run, smolagents_body(rid, 2, extra_ids=(f"call_{rid}_2_answer",)))
    post_chat(other, smolagents_body(rid, 2))
    assert requests_of(world_client, rid) == [(1, 2, 2)]
    assert requests_of(world_client, other["run_id"]) == [(1, 0, 0)]


def test_tool_messages_are_counted_alone_when_there_are_any(world_client):
    """The text of a request is read only when it carries no tool message: the same echo of two calls counts 2
    without one, and beside one `role: "tool"` message the count is that message's 1."""
    run = world_client.create_run("q3_report")
    rid = run["run_id"]
    echoed = smolagents_body(rid, 2)
    post_chat(run, echoed)
    with_tool = dict(echoed, messages=[*echoed["messages"], {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "draft_document", "arguments": json.dumps(DRAFT)}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "drafted"}])
    post_chat(run, with_tool)
    assert requests_of(world_client, rid) == [(1, 2, 2), (2, 1, 1)]


def test_a_text_turn_is_a_tool_call_only_when_one_answer_tool_is_required(world_client):
    """The scripted last turn as each request asks it: a final_answer call only under tool_choice "required" with
    exactly one offered tool that is not a scenario tool (taking one argument); otherwise the text, as before."""
    run = world_client.create_run("q3_report")
    rid = run["run_id"]
    second = {"type": "function", "function": {"name": "ask_user", "parameters": {
        "type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}}
    two_args = {"type": "function", "function": {"name": "final_answer", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}, "why": {"type": "string"}}}}}
    cases = {
        "required, one answer tool": smolagents_body(rid, 2),
        "auto": smolagents_body(rid, 2, tool_choice="auto"),
        "no tool_choice": smolagents_body(rid, 2, tool_choice=None),
        "two answer tools": smolagents_body(rid, 2, tools=openai_tool_definitions() + [FINAL_ANSWER, second]),
        "scenario tools only": smolagents_body(rid, 2, tools=openai_tool_definitions()),
        "an answer tool of two arguments": smolagents_body(rid, 2, tools=openai_tool_definitions() + [two_args]),
    }
    answered = {}
    for case, body in cases.items():
        message = post_chat(run, body)["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        answered[case] = [c["function"]["name"] for c in calls] or len(message["content"].split(" "))
    assert answered == {"required, one answer tool": ["final_answer"], "auto": 60, "no tool_choice": 60,
                        "two answer tools": 60, "scenario tools only": 60, "an answer tool of two arguments": 60}
    assert [tokens_of(world_client, rid, req) for req in range(1, 7)] == [60] * 6
