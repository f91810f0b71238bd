"""Planted clients of the world's four model wires, each through its provider's own SDK (openai, anthropic,
google-genai), whose behaviour is known by construction: `read_then_leave` reads a known number of text tokens of
a streamed answer, waits for the stop, and closes the stream. What the provider still bills after that is the
run's billing profile (harness/billing.py), not the client's doing.

The SDKs talk to the world's base URLs only (127.0.0.1); none retries unless a test asks for its defaults.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai
from google import genai
from google.genai import types as genai_types

#: the model wires the world speaks, as `llm_request`'s `api` names them
ROUTES = ("chat", "responses", "anthropic", "gemini")
PROMPT = "Write the Q3 summary."


def openai_client(run: dict[str, Any], **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=run["model_base_url"], api_key="x", **{"max_retries": 0, "timeout": 20, **kw})


def anthropic_client(run: dict[str, Any], **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=run["anthropic_base_url"], api_key="x",
                               **{"max_retries": 0, "timeout": 20, **kw})


def gemini_client(run: dict[str, Any]) -> genai.Client:
    """google-genai at its defaults (it retries nothing unless given retry options)."""
    return genai.Client(api_key="x", http_options=genai_types.HttpOptions(base_url=run["gemini_base_url"],
                                                                          timeout=20_000))


def text_deltas(route: str, run: dict[str, Any]) -> tuple[Iterator[Any], Callable[[], None]]:
    """The route's streamed answer to the prompt as (an iterator yielding once per text token, close)."""
    if route == "chat":
        chat = openai_client(run).chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": PROMPT}], stream=True)
        return (c for c in chat if c.choices and c.choices[0].delta.content), chat.close
    if route == "responses":
        resp = openai_client(run).responses.create(model="scripted", input=PROMPT, stream=True)
        return (e for e in resp if e.type == "response.output_text.delta"), resp.close
    if route == "anthropic":
        msgs = anthropic_client(run).messages.create(
            model="claude-scripted", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}], stream=True)
        return (e for e in msgs if e.type == "content_block_delta" and e.delta.type == "text_delta"), msgs.close
    client = gemini_client(run)  # held until the stream is closed: a collected client closes its connections

    def close() -> None:
        chunks.close()
        client.close()

    chunks = client.models.generate_content_stream(model="gemini-scripted", contents=PROMPT)
    return (c for c in chunks if c.text), close


def read_then_leave(route: str, run: dict[str, Any], k: int, stopped: threading.Event) -> int:
    """Read `k` text tokens, wait for the stop (at most 10 s), close the stream: the tokens read."""
    deltas, close = text_deltas(route, run)
    read = 0
    for _ in deltas:
        read += 1
        if read == k:
            break
    stopped.wait(10)
    close()
    return read


class StopPresser:
    """The trial's part: reads the run's control stream in a thread and, at the `stop` push, posts the
    `stop_called` mark, then sets `stopped`."""

    def __init__(self, run: dict[str, Any]):
        self.base = run["services_base_url"]
        self.opened, self.stopped = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> StopPresser:
        self.thread.start()
        assert self.opened.wait(5), "control stream did not open"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.thread.join(10)

    def _read(self) -> None:
        with httpx.stream("GET", f"{self.base}/control", timeout=httpx.Timeout(5, read=15)) as r:
            event = None
            for line in r.iter_lines():
                if line.startswith(": open"):
                    self.opened.set()
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "stop":
                    json.loads(line[6:])
                    httpx.post(f"{self.base}/marks", json={"name": "stop_called", "t": time.monotonic_ns()})
                    self.stopped.set()
                    return
