"""How the scripted model reads the tool results it is shown: the rule a scenario declares (`model_rule:`), and the
one predicate that says a result reports an interruption or an error.

Resume fidelity depends on it. A framework that repairs a session stopped mid-call by recording the call with a
result such as "Tool was interrupted." (Strands) hands the decision to the model: a model that reads the result and
asks for the same call again repeats the effect, one that only counts results goes on as if the call had worked.
So the world plays the rule as data, the ledger records each call the model asked for again (`tool_retry_asked`),
and every row says which rule its model followed (`model_rule`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class ModelRuleError(ValueError):
    """A model rule that is none of the declared ones; the message names where it was written."""


@dataclass(frozen=True)
class ModelRule:
    name: str  # how scenarios, the ledger's run_created and rows write it
    retries_failed_results: bool
    meaning: str  # one line, as the report says it
    source: str


RETRY_INTERRUPTED_TOOLS = ModelRule(
    "retry_interrupted_tools", True,
    "a tool result that reads as interrupted or as an error makes the model ask for the same call again (once "
    "per call), then go on with the script",
    "frameworks hand such results to the model for it to act on, and their own default error texts ask it to try "
    "again: openai-agents' default_tool_error_function answers 'An error occurred while running the tool. Please "
    "try again.' (agents/tool.py), LangGraph's ToolNode 'Error: {error}\\n Please fix your mistakes.' "
    "(langgraph/prebuilt/tool_node.py); the MCP specification's tool execution errors are 'actionable feedback that "
    "language models can use to self-correct and retry', and 'Clients SHOULD provide tool execution errors to "
    "language models to enable self-correction' (https://modelcontextprotocol.io/specification/2025-11-25/server/"
    "tools#error-handling). A resumed run is also told to go on ('Continue where you stopped.'), and the "
    "interrupted call is a step of the job that the result says was not done. Anthropic's 'Handle tool calls' "
    "(https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls) describes the other "
    "reading for a turn that must answer the user now: 'Claude will then incorporate this error into its response "
    "to the user'; that is `count_results`")
COUNT_RESULTS = ModelRule(
    "count_results", False,
    "the model picks its next turn by counting tool results, whatever they say (a failed call counts as done)",
    "what the world did before rules existed; a model that reports the failure to the user instead of retrying "
    "moves on alike (Anthropic, 'Handle tool calls': 'Claude will then incorporate this error into its response "
    "to the user')")

RULES: dict[str, ModelRule] = {r.name: r for r in (RETRY_INTERRUPTED_TOOLS, COUNT_RESULTS)}
DEFAULT_RULE = RETRY_INTERRUPTED_TOOLS
#: what rows written before the rule existed were measured under
RULE_BEFORE = COUNT_RESULTS


def parse_model_rule(value: object, where: str) -> ModelRule:
    if isinstance(value, str) and value in RULES:
        return RULES[value]
    raise ModelRuleError(f"{where}: {value!r} is not a model rule (known: {', '.join(RULES)})")


#: the words a tool result uses, as the frameworks write it, to say the call was interrupted or failed; each
#: alternative with where it is written (the installed packages)
FAILED_TEXT = re.compile(
    r"\binterrupted\b"  # Strands' session repair "Tool was interrupted." (strands/tools/_tool_helpers.py);
    # pydantic-ai "The tool call was interrupted before a result was produced." (messages.py); google-adk's LiteLlm
    # "Error: Missing tool result (tool execution may have been interrupted ...)" (models/lite_llm.py)
    r"|\bcancell?ed\b"  # openai-agents "Tool execution cancelled" (run_internal/tool_execution.py); agent-framework
    # "Error: Tool call was cancelled." (_workflows/_agent_executor.py); agno "<tool> was cancelled"
    r"|\baborted\b"  # agent-framework "Error: Tool execution was aborted ..."; agno "tool call aborted: ..."
    r"|^\W*error\b"  # LangGraph's ToolNode "Error: {error}\n Please fix your mistakes."; agent-framework "Error: ..."
    r"|\ban error occurred\b"  # openai-agents' default_tool_error_function
    r"|\bnot sent\b",  # the harness's own NOT_SENT (harness/stop_button.py)
    re.IGNORECASE)


@dataclass(frozen=True)
class ToolResult:
    """One tool result as a request carries it: the call it answers (`call_id`, when the wire names it), its text,
    and whether the wire itself flags it as an error (Anthropic's `is_error`, a Gemini response's `error` key)."""

    call_id: str | None
    text: str
    flagged: bool = False


def reads_as_failed(result: ToolResult) -> bool:
    """The one predicate: the result reports an interruption or an error."""
    return result.flagged or bool(FAILED_TEXT.search(result.text))
