"""The tool catalogue, once: each tool's service, parameters and description, which tools are side
effects, how each effect is undone, and what makes two effects "the same".

The world's services, the scenario validator, the in-process tools, the MCP server and the metrics
all read it from here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# tool name -> (service path, parameters, description)
TOOL_SPECS: dict[str, tuple[str, dict[str, str], str]] = {
    "draft_document": (
        "docs/draft",
        {"title": "Title of the document", "topic": "What the document is about"},
        "Draft a document and return its text. Has no side effect.",
    ),
    "send_email": (
        "email/send",
        {"to": "Recipient address", "subject": "Subject line", "body": "Message body"},
        "Send an email. This is a side effect: the email is delivered.",
    ),
    "open_pr": (
        "pr/open",
        {"title": "Pull request title", "branch": "Source branch"},
        "Open a pull request. This is a side effect.",
    ),
    "book_meeting": (
        "calendar/book",
        {"title": "Meeting title", "when": "Start time, ISO 8601"},
        "Book a calendar meeting. This is a side effect: invitations go out.",
    ),
    "post_chat": (
        "chat/post",
        {"channel": "Channel name", "text": "Message text"},
        "Post a chat message. This is a side effect.",
    ),
}
TOOL_PARAMETERS: dict[str, tuple[str, ...]] = {n: tuple(s[1]) for n, s in TOOL_SPECS.items()}
TOOL_NAMES = tuple(TOOL_SPECS)
TOOL_KIND = {"send_email": "email", "open_pr": "pr", "book_meeting": "calendar", "post_chat": "chat"}
COMPENSATION_PATH = {"email": "email/recall", "pr": "pr/close", "calendar": "calendar/cancel",
                     "chat": "chat/delete"}


def json_schema(name: str) -> dict[str, Any]:
    """JSON Schema of a tool's parameters (all strings, all required)."""
    params = TOOL_SPECS[name][1]
    return {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
        "required": list(params),
        "additionalProperties": False,
    }


def openai_tool_definitions() -> list[dict[str, Any]]:
    """The tools in OpenAI Chat Completions form, for loops that talk to the model API directly."""
    return [
        {"type": "function",
         "function": {"name": n, "description": s[2], "parameters": json_schema(n)}}
        for n, s in TOOL_SPECS.items()
    ]


EFFECT_KINDS = tuple(COMPENSATION_PATH)  # email, pr, calendar, chat
SERVICE_KINDS = (*EFFECT_KINDS, "docs")


def logical_effect(kind: str, arguments: dict[str, Any]) -> str:
    """What makes two effects "the same" to the outside world: their kind and their arguments."""
    return hashlib.sha256(f"{kind}:{json.dumps(arguments, sort_keys=True)}".encode()).hexdigest()[:16]
