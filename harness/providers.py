"""The model providers a trial can talk to, as data: the world speaks each one's API, and a framework is run through
its own client for the provider a trial names (its documented defaults: retries, back-off, timeouts).

A trial's `provider` decides which of the world's base URLs its adapter gets (`TrialContext.model_base_url`: the
one that provider's official SDK takes, so the SDK adds its API's path itself) and the model name it asks for (a
name the framework's own routing reads as that provider's: `gemini-...` for Gemini, `claude-...` for Anthropic).
An adapter declares the providers it has clients for (`providers` in framework.toml, the first its home one); a run
of a provider it does not declare is refused before any trial.

Standard library only: harness/frameworks.py reads it before anything is installed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    name: str  # how the CLI, framework.toml, TrialContext and rows write it
    #: the key of the world's `POST /runs` answer holding the base URL this provider's official SDK takes
    base_url_key: str
    model_name: str  # the model a trial asks for
    sdk: str  # the official client, as its docs name it (the reference adapter uses it)
    wire: str  # what the world serves it on (docs/world-api.md)


OPENAI = Provider("openai", "model_base_url", "scripted-model", "openai (OpenAI(base_url=...))",
                  "Chat Completions and Responses under <run>/v1")
ANTHROPIC = Provider("anthropic", "anthropic_base_url", "claude-scripted", "anthropic (Anthropic(base_url=...))",
                     "Messages at <run>/v1/messages (the SDK adds /v1/messages)")
GEMINI = Provider("gemini", "gemini_base_url", "gemini-scripted",
                  "google-genai (genai.Client(http_options=HttpOptions(base_url=...)))",
                  "generateContent / streamGenerateContent at <run>/v1beta/models/<model>:<method> (the SDK adds "
                  "the path)")

PROVIDERS: dict[str, Provider] = {p.name: p for p in (OPENAI, ANTHROPIC, GEMINI)}
#: the provider of a run that names none, and of every row written before providers existed
DEFAULT_PROVIDER = OPENAI.name
#: the anchors a framework's full run (`nox -s bench`) sweeps on each provider it declares after its home one (the
#: first): event anchors only, so that providers add a slice of the matrix and do not multiply every cell of it;
#: the mitigation and orphan matrices run on the home provider alone
OTHER_PROVIDERS_ANCHORS = "event"


class ProviderError(ValueError):
    """A provider that is none of PROVIDERS; the message names where it was written."""


def provider(name: str, where: str = "provider") -> Provider:
    """The provider named `name`, or a ProviderError naming `where`."""
    if name not in PROVIDERS:
        raise ProviderError(f"{where}: {name!r} is none of {', '.join(PROVIDERS)}")
    return PROVIDERS[name]
