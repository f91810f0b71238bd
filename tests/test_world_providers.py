"""The world's Anthropic Messages and Gemini wires, driven by the providers' own SDKs (anthropic, google-genai):
their parsing is the test that the wire is right. The ledger is asserted exactly, as for the OpenAI routes."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from harness.scenario import scenario_from_dict
from harness.world.model_api import tokens_per_turn
from tests.known_answer.providers import anthropic_client, gemini_client

EMAIL = {"to": "board@example.com", "subject": "Q3", "body": "Attached."}
#: text and a call, two calls in one turn, then the summary
SCENARIO: dict[str, Any] = {
    "name": "two_wires", "offsets": [],
    "turns": [
        {"text_tokens": 2, "tool_calls": [{"name": "draft_document", "arguments": {"title": "Q3", "topic": "Q3"}}]},
        {"tool_calls": [{"name": "send_email", "arguments": EMAIL},
                        {"name": "post_chat", "arguments": {"channel": "#fin", "text": "sent"}}]},
        {"text_tokens": 4},
    ],
}
TOKENS = tokens_per_turn(scenario_from_dict(SCENARIO))


def ledger(world_client, run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [e for e in world_client.ledger(run["run_id"])["events"] if e["event"] == name]


# ----- Anthropic Messages --------------------------------------------------------------------------------

def claude_turns(client: anthropic.Anthropic, stream: bool) -> list[anthropic.types.Message]:
    """The whole scripted job, each tool_use answered by a tool_result in the next message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the Q3 job."}]
    answers = []
    for _ in range(3):
        kw = {"model": "claude-scripted", "max_tokens": 1024, "messages": messages}
        if stream:
            with client.messages.stream(**kw) as s:
                answer = s.get_final_message()
        else:
            answer = client.messages.create(**kw)
        answers.append(answer)
        messages = [*messages, {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                                 for b in answer.content]}]
        uses = [b for b in answer.content if b.type == "tool_use"]
        if uses:
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id,
                                                          "content": "ok"} for b in uses]})
    return answers


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_messages_script_the_job_turn_by_turn(world_client, stream):
    run = world_client.create_run(SCENARIO)
    first, second, last = claude_turns(anthropic_client(run), stream)
    assert [b.type for b in first.content] == ["text", "tool_use"] and first.stop_reason == "tool_use"
    assert first.content[1].name == "draft_document" and first.content[1].input == {"title": "Q3", "topic": "Q3"}
    assert [(b.name, b.input) for b in second.content] == [("send_email", EMAIL),
                                                          ("post_chat", {"channel": "#fin", "text": "sent"})]
    assert last.stop_reason == "end_turn" and len(last.content[0].text.split()) == 4
    assert [a.usage.output_tokens for a in (first, second, last)] == TOKENS
    requests = ledger(world_client, run, "llm_request")
    assert [(e["api"], e["stream"], e["turn"], e["tool_results"]) for e in requests] == [
        ("anthropic", stream, 0, 0), ("anthropic", stream, 1, 1), ("anthropic", stream, 2, 3)]
    assert [(e["tokens"], e["complete"]) for e in ledger(world_client, run, "response_done")] == [
        (n, True) for n in TOKENS]


def test_anthropic_stream_is_its_event_sequence(world_client):
    """One token per content_block_delta (or tool_use block start); output usage only in message_delta."""
    run = world_client.create_run(SCENARIO)
    events = []
    with httpx.stream("POST", f"{run['anthropic_base_url']}/v1/messages", json={
            "model": "claude-scripted", "max_tokens": 64, "stream": True,
            "messages": [{"role": "user", "content": "go"}]}) as r:
        assert r.headers["content-type"] == "text/event-stream"
        name = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                assert data["type"] == name
                events.append(data)
    args = json.dumps({"title": "Q3", "topic": "Q3"})
    assert [e["type"] for e in events] == [
        "message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "content_block_start", *["content_block_delta"] * len(range(0, len(args), 12)),
        "content_block_stop", "message_delta", "message_stop"]
    assert events[0]["message"]["usage"]["output_tokens"] == 1  # as the API reports it at the start
    assert "".join(e["delta"].get("partial_json", "") for e in events if e["type"] == "content_block_delta") == args
    assert events[-2]["usage"] == {"output_tokens": TOKENS[0]}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert len(ledger(world_client, run, "token")) == TOKENS[0]


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": name, "input_schema": {"type": "object", "properties": {}}}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_calls_an_mcp_tool_by_the_name_it_was_offered(world_client, stream):
    """A client that offers an MCP server's tools as `mcp__<server>__<tool>` (Claude Code) gets its calls under
    those names; a tool offered under its bare name as well keeps that name."""
    run = world_client.create_run(SCENARIO)
    tools = [_tool("mcp__world__draft_document"), _tool("mcp__world__send_email"), _tool("post_chat"),
             _tool("mcp__world__post_chat")]
    client = anthropic_client(run)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the Q3 job."}]
    names = []
    for _ in range(2):
        kw = {"model": "claude-scripted", "max_tokens": 1024, "messages": messages, "tools": tools}
        if stream:
            with client.messages.stream(**kw) as s:
                answer = s.get_final_message()
        else:
            answer = client.messages.create(**kw)
        uses = [b for b in answer.content if b.type == "tool_use"]
        names.append([b.name for b in uses])
        messages = [*messages, {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                                 for b in answer.content]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "ok"}
                                                 for b in uses]}]
    assert names == [["mcp__world__draft_document"], ["mcp__world__send_email", "post_chat"]]


@pytest.mark.parametrize("messages,message", [
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}],
     "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` "
     "block must have a corresponding `tool_use` block in the previous message."),
    ([{"role": "user", "content": "go"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "send_email", "input": {}}]},
      {"role": "user", "content": "stop that, go on"}],
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each "
     "`tool_use` block must have a corresponding `tool_result` block in the next message."),
])
def test_anthropic_refuses_what_the_real_api_refuses(world_client, messages, message):
    """A resume that drops a stopped turn's tool results is refused here as by the real API: 400, its words."""
    run = world_client.create_run(SCENARIO)
    with pytest.raises(anthropic.BadRequestError) as raised:
        anthropic_client(run).messages.create(model="claude-scripted", max_tokens=64, messages=messages)
    assert raised.value.body == {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    assert ledger(world_client, run, "llm_request") == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault,error,kind,retry_after", [
    ({"status": 429, "retry_after_s": 2}, anthropic.RateLimitError, "rate_limit_error", "2"),
    ({"status": 529}, anthropic.OverloadedError, "overloaded_error", None),
    ({"status": 500}, anthropic.InternalServerError, "api_error", None),
])
def test_anthropic_faults_in_its_error_shape_then_the_answer(world_client, stream, fault, error, kind, retry_after):
    run = world_client.create_run({**SCENARIO, "turns": [{"text_tokens": 3, "fault": fault}]})
    client = anthropic_client(run)
    kw = {"model": "claude-scripted", "max_tokens": 64, "messages": [{"role": "user", "content": "go"}],
          "stream": stream}
    with pytest.raises(error) as raised:
        client.messages.create(**kw)
    assert raised.value.status_code == fault["status"]
    assert raised.value.body["type"] == "error" and raised.value.body["error"]["type"] == kind
    assert raised.value.response.headers.get("retry-after") == retry_after
    answer = client.messages.create(**kw)
    text = answer.content[0].text if not stream else "".join(
        e.delta.text for e in answer if e.type == "content_block_delta")
    assert len(text.split()) == 3
    assert [(e["req"], e["status"]) for e in ledger(world_client, run, "llm_error")] == [(1, fault["status"])]


# ----- Gemini --------------------------------------------------------------------------------------------

def gemini_turns(run: dict[str, Any], stream: bool) -> list[list[genai_types.Part]]:
    """The whole scripted job; each model turn of calls is answered by a turn of as many function responses."""
    client = gemini_client(run)
    contents = [genai_types.Content(role="user", parts=[genai_types.Part(text="Do the Q3 job.")])]
    turns: list[list[genai_types.Part]] = []
    usage = []
    for _ in range(3):
        if stream:
            chunks = list(client.models.generate_content_stream(model="gemini-scripted", contents=contents))
            parts = [p for c in chunks for p in c.candidates[0].content.parts or [] if p.text or p.function_call]
            usage.append(chunks[-1].usage_metadata.candidates_token_count)
            assert [c.usage_metadata.candidates_token_count for c in chunks[:-1]] == [None] * (len(chunks) - 1)
        else:
            answer = client.models.generate_content(model="gemini-scripted", contents=contents)
            parts = answer.candidates[0].content.parts
            usage.append(answer.usage_metadata.candidates_token_count)
        turns.append(parts)
        contents.append(genai_types.Content(role="model", parts=parts))
        calls = [p.function_call for p in parts if p.function_call]
        if calls:
            contents.append(genai_types.Content(role="user", parts=[
                genai_types.Part(function_response=genai_types.FunctionResponse(id=c.id, name=c.name,
                                                                               response={"ok": True}))
                for c in calls]))
    assert usage == TOKENS
    return turns


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_gemini_scripts_the_job_turn_by_turn(world_client, stream):
    run = world_client.create_run(SCENARIO)
    first, second, last = gemini_turns(run, stream)
    text = "".join(p.text for p in first if p.text)
    assert len(text.split()) == 2
    assert [(p.function_call.name, p.function_call.args) for p in first if p.function_call] == [
        ("draft_document", {"title": "Q3", "topic": "Q3"})]
    assert [(p.function_call.name, p.function_call.args) for p in second] == [
        ("send_email", EMAIL), ("post_chat", {"channel": "#fin", "text": "sent"})]
    assert len("".join(p.text for p in last).split()) == 4
    requests = ledger(world_client, run, "llm_request")
    assert [(e["api"], e["stream"], e["turn"], e["tool_results"]) for e in requests] == [
        ("gemini", stream, 0, 0), ("gemini", stream, 1, 1), ("gemini", stream, 2, 3)]
    assert [e["tokens"] for e in ledger(world_client, run, "response_done")] == TOKENS


def test_a_gemini_stream_sends_a_function_call_whole_with_its_last_token(world_client):
    """Text: a chunk per token. A call's tokens are generated one by one, its part sent once, with the last."""
    run = world_client.create_run(SCENARIO)
    client = gemini_client(run)  # held: a collected google-genai client closes its connections
    chunks = list(client.models.generate_content_stream(model="gemini-scripted", contents="go"))
    parts = [c.candidates[0].content.parts[0] for c in chunks]
    assert [bool(p.text) for p in parts] == [True, True, False, False]  # 2 words, the call, the final chunk
    assert parts[2].function_call.name == "draft_document"
    assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert len(ledger(world_client, run, "token")) == TOKENS[0] > 3


@pytest.mark.parametrize("contents,message", [
    ([{"role": "user", "parts": [{"functionResponse": {"name": "send_email", "response": {"ok": True}}}]}],
     "Please ensure that function response turn comes immediately after a function call turn."),
    ([{"role": "user", "parts": [{"text": "go"}]},
      {"role": "model", "parts": [{"functionCall": {"name": "send_email", "args": {}}},
                                  {"functionCall": {"name": "post_chat", "args": {}}}]},
      {"role": "user", "parts": [{"functionResponse": {"name": "send_email", "response": {"ok": True}}}]}],
     "Please ensure that the number of function response parts is equal to the number of function call parts of "
     "the function call turn."),
])
def test_gemini_refuses_what_the_real_api_refuses(world_client, contents, message):
    run = world_client.create_run(SCENARIO)
    client = gemini_client(run)
    with pytest.raises(genai_errors.ClientError) as raised:
        client.models.generate_content(model="gemini-scripted", contents=contents)
    assert (raised.value.code, raised.value.status, raised.value.message) == (400, "INVALID_ARGUMENT", message)
    assert ledger(world_client, run, "llm_request") == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault,error,status", [
    ({"status": 429, "retry_after_s": 3}, genai_errors.ClientError, "RESOURCE_EXHAUSTED"),
    ({"status": 503}, genai_errors.ServerError, "UNAVAILABLE"),
])
def test_gemini_faults_in_googles_error_shape_then_the_answer(world_client, stream, fault, error, status):
    run = world_client.create_run({**SCENARIO, "turns": [{"text_tokens": 3, "fault": fault}]})
    client = gemini_client(run)

    def ask() -> str:
        if stream:
            return "".join(c.text or "" for c in client.models.generate_content_stream(
                model="gemini-scripted", contents="go"))
        return client.models.generate_content(model="gemini-scripted", contents="go").text

    with pytest.raises(error) as raised:
        ask()
    assert (raised.value.code, raised.value.status) == (fault["status"], status)
    details = raised.value.details["error"].get("details")
    assert details == (None if "retry_after_s" not in fault else [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}])
    assert len(ask().split()) == 3
    assert [(e["req"], e["status"]) for e in ledger(world_client, run, "llm_error")] == [(1, fault["status"])]


def test_gemini_streams_as_server_sent_events_only(world_client):
    run = world_client.create_run(SCENARIO)
    r = httpx.post(f"{run['gemini_base_url']}/v1beta/models/m:streamGenerateContent", json={"contents": []})
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert ledger(world_client, run, "llm_request") == []
