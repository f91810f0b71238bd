"""What a model provider still generates, and bills, after the client of a streamed answer went away.

Providers differ, and the headline "tokens after the stop" depends on it, so the world plays each behaviour
as a profile, declared here as data with the source that documents it. A scenario names its profile
(`billing:`), a run may override it (`POST /runs` `billing`), and the ledger's `run_created` records the one
the run used. A non-streamed answer is generated in full under every profile (the client never tells the
provider it left).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_RUNS_ON_MS = 600_000.0


class BillingError(ValueError):
    """A billing profile that is none of the declared ones; the message names where it was written."""


@dataclass(frozen=True)
class BillingProfile:
    name: str  # how scenarios, `POST /runs`, the ledger and rows write it
    #: how long generation goes on after the client left: 0 = it stops there, None = to the end of the answer
    runs_on_ms: float | None
    meaning: str
    source: str  # where the behaviour is documented (a doc page, an issue)

    @property
    def stops_at_disconnect(self) -> bool:
        return self.runs_on_ms == 0


STOPS_AT_DISCONNECT = BillingProfile(
    "stops_at_disconnect", 0.0,
    "generation (and billing) ends the moment the provider sees the client go away",
    "what the world did before profiles existed; OpenAI and Anthropic document nothing either way "
    "(https://github.com/openai/openai-node/issues/1505, https://github.com/openai/openai-openapi/issues/539)")
RUNS_TO_COMPLETION = BillingProfile(
    "runs_to_completion", None,
    "the provider generates the whole answer after the client left, silently, and bills all of it",
    "Gemini: aborting is 'a client-only operation ... will not cancel the request in the service' and 'you will "
    "still be charged usage' (js-genai's abortSignal, e.g. "
    "https://googleapis.github.io/js-genai/release_docs/interfaces/types.GenerateContentConfig.html); 'this will "
    "not cancel the request in the backend, so any applicable billing charges will still be applied' (Firebase AI "
    "SingleRequestOptions: https://firebase.google.com/docs/reference/js/ai.singlerequestoptions)")
#: the third kind, `runs_on_ms:N`, is parameterised: an engine that notices the disconnect N ms late
RUNS_ON_SOURCE = ("serving engines that notice a disconnect late or not at all: vLLM "
                  "(https://github.com/vllm-project/vllm/issues/54947), SGLang "
                  "(https://github.com/sgl-project/sglang/issues/36333), Ollama "
                  "(https://github.com/ollama/ollama/issues/11889), llama.cpp "
                  "(https://github.com/ggml-org/llama.cpp/issues/24496)")

PROFILES: dict[str, BillingProfile] = {p.name: p for p in (STOPS_AT_DISCONNECT, RUNS_TO_COMPLETION)}
DEFAULT_PROFILE = STOPS_AT_DISCONNECT
FORMS = "stops_at_disconnect, runs_to_completion or runs_on_ms:N"
#: what a framework's full run (`nox -s bench`) also plays under the profile opposite to the default, on each
#: provider it declares, for the table of what a stop costs under each profile: the scenarios whose answers a stop
#: can cut short, at event anchors (the world holds at the anchor: both profiles see the same stop), in the
#: adapter's first tool style
BILLING_MATRIX = {"billing": RUNS_TO_COMPLETION.name, "scenarios": ("q3_report", "long_answer"), "anchors": "event"}


def runs_on(ms: float) -> BillingProfile:
    """An engine that keeps generating for `ms` after the client left, and bills what it generated."""
    return BillingProfile(f"runs_on_ms:{ms:g}", float(ms),
                          f"generation goes on for {ms:g} ms after the client left; those tokens are billed",
                          RUNS_ON_SOURCE)


def parse_billing(spec: Any, where: str = "billing") -> BillingProfile:
    """A profile from its name (`runs_to_completion`, `runs_on_ms:250`) or `{runs_on_ms: 250}`."""
    if isinstance(spec, dict) and set(spec) == {"runs_on_ms"}:
        spec = f"runs_on_ms:{spec['runs_on_ms']}"
    if isinstance(spec, str):
        if spec in PROFILES:
            return PROFILES[spec]
        m = re.fullmatch(r"runs_on_ms:(\d+(?:\.\d+)?)", spec)
        if m and float(m.group(1)) <= MAX_RUNS_ON_MS:
            return runs_on(float(m.group(1)))
    raise BillingError(f"{where}: expected {FORMS} (N from 0 to {MAX_RUNS_ON_MS:g}), got {spec!r}")
