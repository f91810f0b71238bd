"""Scenario files: the scripted job every adapter runs, validated with errors that name file and field.

A scenario says what the model answers at each turn, how fast it talks, how slow each service is,
and at which offsets the stop is pressed. It is data, never code, so that no adapter can know it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from harness.billing import DEFAULT_PROFILE, BillingError, BillingProfile, parse_billing
from harness.model_rule import DEFAULT_RULE, ModelRule, ModelRuleError, parse_model_rule
from harness.tools.catalogue import EFFECT_KINDS, SERVICE_KINDS, TOOL_KIND, TOOL_NAMES, TOOL_PARAMETERS

# bounds that keep one scenario (a file, or inline in POST /runs) from tying up the world
MAX_TURNS = 100
MAX_TEXT_TOKENS = 20_000  # per turn; the shipped long_answer streams 2,000

DEFAULT_SCENARIOS_DIR = Path(__file__).resolve().parent.parent / "scenarios"

#: how long a trial stays alive and observed after the stop (and after resume returns), at least, before it
#: may call the run over. A retry in its back-off is seen however long it waits, as scheduled work of the
#: subject (harness/trial/activity.py: a sleeping task or thread); the floor is for what the audit cannot see,
#: such as work of another process. Every adapter's client is openai-python's AsyncOpenAI at its defaults (2
#: retries, 0.5 s then 1 s apart), whose last retry leaves within 1.5 s of the first failure: 2 s covers that
#: plus the calls on loopback. A scenario may ask for more (`observe_ms`), and so may `stopbench run
#: --observe-ms`. README.md, "Observation", says the same.
DEFAULT_OBSERVE_MS = 2000.0
MAX_OBSERVE_MS = 300_000.0

#: the events a stop can be anchored at: the model's (the N-th request, the N-th token, the N-th scripted fault
#: sent), and a side effect's (the N-th of one kind received, or committed)
MODEL_ANCHORS = ("llm_request", "token", "llm_error")
EFFECT_ANCHORS = ("effect_received", "effect_committed")

_OFFSET_RE = re.compile(
    r"^(?:at:(?P<ms>\d+(?:\.\d+)?)ms"
    rf"|on:(?P<event>{'|'.join(MODEL_ANCHORS)}):(?P<n>[1-9]\d*)"
    rf"|on:(?P<effect_event>{'|'.join(EFFECT_ANCHORS)}):(?P<kind>[a-z]+)(?::(?P<en>[1-9]\d*))?)$"
)
OFFSET_FORMS = ("at:<N>ms, on:llm_request:N, on:token:N, on:llm_error:N, on:effect_received:KIND[:N] or "
                "on:effect_committed:KIND[:N]")


class ScenarioError(ValueError):
    """A scenario (file or inline) is malformed; the message names the file and the field."""


#: an offset's kind, as rows' `offset_kind` says it: a stop at an event anchor, or at a time after the start
OFFSET_KINDS = ("event", "time")
#: which offsets a run or a compare takes (`--anchors`): event-anchored trials' counts must agree run to run
ANCHOR_KINDS = ("all", *OFFSET_KINDS)


@dataclass(frozen=True)
class Offset:
    """When the stop is pressed: a time after the run starts, or an event the world observes.

    Parsed once from its text where it comes in (a scenario file, `--offset`, `run_trial`: `parse_offset`);
    from there it travels as this object, and as its data (`to_data` / `from_data`: typed fields, never the
    text to parse again) to the world and to a spawned subject. `text` is kept as written: rows and trial ids
    carry it."""

    text: str
    at_ms: float | None = None  # a time offset: ms after start() is called
    event: str | None = None  # an event anchor: one of MODEL_ANCHORS or EFFECT_ANCHORS
    effect: str | None = None  # the effect kind of an EFFECT_ANCHORS anchor (`email`, `pr`, ...)
    n: int = 1  # the N-th such event

    @property
    def is_event(self) -> bool:
        return self.event is not None

    @property
    def kind(self) -> str:
        """`event` or `time` (OFFSET_KINDS), as a row's `offset_kind` says it."""
        return "event" if self.is_event else "time"

    def matches(self, event: str, effect: str | None, count: int) -> bool:
        """The world's test, on every anchorable event: is this the N-th event the stop is anchored at?"""
        return self.event == event and (self.effect is None or self.effect == effect) and count == self.n

    def to_data(self) -> dict[str, Any]:
        """The offset as JSON (for POST /runs `stop_anchor`, a spawned subject's plan): `from_data` reads it back."""
        return asdict(self)

    @classmethod
    def from_data(cls, data: Any, where: str = "offset") -> Offset:
        """An offset from its data (`to_data`), its fields checked as a scenario's are."""
        if not isinstance(data, dict) or set(data) - {f.name for f in fields(cls)} or not isinstance(
                data.get("text"), str):
            raise ScenarioError(f"{where}: expected an offset's data {{text, at_ms | event, effect?, n}} "
                                f"(harness.scenario.Offset.to_data), got {str(data)[:80]!r}")
        text, at_ms, event, effect, n = (data.get(k) for k in ("text", "at_ms", "event", "effect", "n"))
        n = 1 if n is None else n
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ScenarioError(f"{where}.n: expected an integer >= 1, got {n!r}")
        if event is None:
            if not isinstance(at_ms, (int, float)) or isinstance(at_ms, bool) or not at_ms >= 0 or effect or n != 1:
                raise ScenarioError(f"{where}: a time offset has at_ms >= 0 and no event, effect or n, got {data!r}")
            return cls(text=text, at_ms=float(at_ms))
        if event not in (*MODEL_ANCHORS, *EFFECT_ANCHORS) or at_ms is not None:
            raise ScenarioError(f"{where}.event: {event!r} is not one of {', '.join((*MODEL_ANCHORS, *EFFECT_ANCHORS))}"
                                " (and an event anchor has no at_ms)")
        if event in EFFECT_ANCHORS and effect not in EFFECT_KINDS:
            raise ScenarioError(f"{where}.effect: {effect!r} is not one of {', '.join(EFFECT_KINDS)}")
        if event in MODEL_ANCHORS and effect is not None:
            raise ScenarioError(f"{where}.effect: {event} anchors have no effect kind, got {effect!r}")
        return cls(text=text, event=event, effect=effect, n=n)


def parse_offset(text: str, where: str = "offset") -> Offset:
    """An offset from its text (at the edge: a scenario file, the command line, run_trial)."""
    m = _OFFSET_RE.match(str(text).strip())
    if not m:
        raise ScenarioError(f"{where}: {text!r} is not an offset; expected {OFFSET_FORMS}")
    if m.group("ms") is not None:
        return Offset(text=text, at_ms=float(m.group("ms")))
    if m.group("event"):
        return Offset(text=text, event=m.group("event"), n=int(m.group("n")))
    kind = m.group("kind")
    if kind not in EFFECT_KINDS:
        raise ScenarioError(f"{where}: effect kind {kind!r} is not one of {', '.join(EFFECT_KINDS)}")
    return Offset(text=text, event=m.group("effect_event"), effect=kind, n=int(m.group("en") or 1))


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


#: the HTTP statuses a scripted fault may answer with: a rate limit, or a server error
FAULT_STATUSES = (429, *range(500, 600))
MAX_RETRY_AFTER_S = 60  # what openai-python still honours; a longer Retry-After is no back-off a test waits for
MAX_FAULTS_PER_TURN = 10


@dataclass(frozen=True)
class Fault:
    """What the provider does to one request for a turn instead of answering it: an HTTP error (`status`, with
    `retry_after_s` as the Retry-After header), or a response dropped after `reset_after_tokens` tokens (the
    connection closed without the rest of the answer). A faulted request does not consume the turn: the
    next request for the turn gets the next fault, or the turn's answer."""

    status: int | None = None
    retry_after_s: int | None = None
    reset_after_tokens: int | None = None

    @property
    def kind(self) -> str:
        """`rate_limit` (429), `server_error` (5xx) or `reset`, as the ledger's llm_error says it."""
        if self.reset_after_tokens is not None:
            return "reset"
        return "rate_limit" if self.status == 429 else "server_error"


@dataclass(frozen=True)
class Turn:
    """One model answer: some text tokens, then zero or more tool calls (several = parallel); and the faults
    the provider answers the turn's first requests with, in order, before the answer."""

    text_tokens: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    faults: tuple[Fault, ...] = ()


@dataclass(frozen=True)
class DeclaredTool:
    """A tool of the user's own agent that a scenario scripts calls to: its name and parameters are the agent's,
    its side effect goes to one of the world's services (the agent's implementation posts there)."""

    service: str  # one of SERVICE_KINDS
    parameters: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    turns: tuple[Turn, ...]
    ttft_ms: float
    tokens_per_s: float  # 0 = no pacing (as fast as the server can)
    latency_ms: dict[str, float]
    offsets: tuple[Offset, ...]
    commit_on_disconnect: bool = True
    #: the scenario this one is the same job as, under other world rules (a service that honours a disconnect):
    #: the report sets the two side by side
    variant_of: str = ""
    observe_ms: float = DEFAULT_OBSERVE_MS  # the observation floor (see DEFAULT_OBSERVE_MS)
    #: what the provider bills after a streamed answer's client left (harness/billing.py); a run may override it
    billing: BillingProfile = DEFAULT_PROFILE
    #: how the scripted model reads a tool result that reports an interruption or an error (harness/model_rule.py)
    model_rule: ModelRule = DEFAULT_RULE
    prompt: str = ""
    tools: dict[str, DeclaredTool] = field(default_factory=dict)  # the user's tools the turns may call
    #: the agent's own built-in tools the turns may call (a coding CLI's shell: `exec_command`), name -> parameters;
    #: no world service stands behind them: what they start is found by the audits and the census
    agent_tools: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = "<inline>"
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def digest(self) -> str:
        """Hash of the scenario's content: rows carry it so results from edited scenarios never mix."""
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()[:16]

    def turn_for(self, tool_results: int) -> int:
        """Turn index for a request that already carries `tool_results` tool results."""
        done = 0
        for i, turn in enumerate(self.turns):
            if tool_results <= done:
                return i
            done += len(turn.tool_calls)
        return len(self.turns)  # past the script: the model only says it is done

    @property
    def final_turn(self) -> int:
        return len(self.turns) - 1

    @property
    def effect_calls(self) -> list[ToolCall]:
        return [c for t in self.turns for c in t.tool_calls if self.service_of(c.name) != "docs"]

    def service_of(self, tool: str) -> str:
        """The world's service a scripted call lands on: a built-in tool's, or the declared tool's."""
        if tool in self.tools:
            return self.tools[tool].service
        return TOOL_KIND.get(tool, "docs")


def _need(d: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if key not in d:
        raise ScenarioError(f"{where}: missing field '{key}'")
    value = d[key]
    if not isinstance(value, typ) or isinstance(value, bool) and typ in (int, float, (int, float)):
        names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise ScenarioError(f"{where}.{key}: expected {names}, got {type(value).__name__} {value!r}")
    return value


def scenario_from_dict(data: Any, source: str = "<inline>") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario must be a mapping, got {type(data).__name__}")
    known = {"name", "description", "prompt", "turns", "pacing", "latency_ms", "offsets",
             "commit_on_disconnect", "observe_ms", "tools", "agent_tools", "variant_of", "billing",
             "model_rule"}
    for key in data:
        if key not in known:
            raise ScenarioError(f"{source}: unknown field '{key}' (known: {', '.join(sorted(known))})")
    name = _need(data, "name", str, source)
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ScenarioError(f"{source}.name: {name!r} must be lower_snake_case")
    pacing = data.get("pacing", {})
    if not isinstance(pacing, dict):
        raise ScenarioError(f"{source}.pacing: expected a mapping")
    for key, value in pacing.items():
        if key not in ("ttft_ms", "tokens_per_s"):
            raise ScenarioError(f"{source}.pacing: unknown field '{key}' (known: tokens_per_s, ttft_ms)")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ScenarioError(f"{source}.pacing.{key}: expected a number >= 0, got {value!r}")
    ttft = float(pacing.get("ttft_ms", 0))
    tps = float(pacing.get("tokens_per_s", 0))
    latency_raw = data.get("latency_ms", {})
    if not isinstance(latency_raw, dict):
        raise ScenarioError(f"{source}.latency_ms: expected a mapping of service kind to milliseconds")
    latency: dict[str, float] = {k: 0.0 for k in SERVICE_KINDS}
    for kind, ms in latency_raw.items():
        if kind not in SERVICE_KINDS:
            raise ScenarioError(f"{source}.latency_ms.{kind}: unknown service (known: {', '.join(SERVICE_KINDS)})")
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
            raise ScenarioError(f"{source}.latency_ms.{kind}: expected milliseconds >= 0, got {ms!r}")
        latency[kind] = float(ms)
    declared = _declared_tools(data.get("tools", {}), f"{source}.tools")
    agent_tools = _agent_tools(data.get("agent_tools", {}), f"{source}.agent_tools")
    turns_raw = _need(data, "turns", list, source)
    if not turns_raw:
        raise ScenarioError(f"{source}.turns: at least one turn is needed")
    if len(turns_raw) > MAX_TURNS:
        raise ScenarioError(f"{source}.turns: {len(turns_raw)} turns; at most {MAX_TURNS}")
    turns = []
    for i, t in enumerate(turns_raw):
        where = f"{source}.turns[{i}]"
        if not isinstance(t, dict):
            raise ScenarioError(f"{where}: expected a mapping with 'text_tokens' and/or 'tool_calls'")
        for key in t:
            if key not in ("text_tokens", "tool_calls", "fault"):
                raise ScenarioError(f"{where}: unknown field '{key}' (known: fault, text_tokens, tool_calls)")
        text_tokens = t.get("text_tokens", 0)
        if not isinstance(text_tokens, int) or isinstance(text_tokens, bool) or not 0 <= text_tokens <= MAX_TEXT_TOKENS:
            raise ScenarioError(f"{where}.text_tokens: expected an integer from 0 to {MAX_TEXT_TOKENS}, "
                                f"got {text_tokens!r}")
        calls = []
        for j, c in enumerate(t.get("tool_calls", []) or []):
            cw = f"{where}.tool_calls[{j}]"
            if not isinstance(c, dict):
                raise ScenarioError(f"{cw}: expected a mapping with 'name' and 'arguments'")
            tool = _need(c, "name", str, cw)
            if tool not in TOOL_NAMES and tool not in declared and tool not in agent_tools:
                known = ", ".join((*TOOL_NAMES, *declared, *agent_tools))
                raise ScenarioError(f"{cw}.name: unknown tool {tool!r} (known: {known}; declare your agent's own "
                                    "tools under `tools`, an agent's built-in tools under `agent_tools`)")
            args = _need(c, "arguments", dict, cw)
            expected = set(declared[tool].parameters if tool in declared else agent_tools[tool]
                           if tool in agent_tools else TOOL_PARAMETERS[tool])
            if set(args) != expected:
                raise ScenarioError(f"{cw}.arguments: {tool} takes {sorted(expected)}, got {sorted(args)}")
            # the harness's tools take strings; an agent's built-in tool takes what its own schema says
            calls.append(ToolCall(tool, dict(args) if tool in agent_tools else {k: str(v) for k, v in args.items()}))
        if text_tokens == 0 and not calls:
            raise ScenarioError(f"{where}: a turn needs text_tokens > 0 or at least one tool call")
        faults = _faults(t.get("fault", []), f"{where}.fault")
        turns.append(Turn(text_tokens=text_tokens, tool_calls=tuple(calls), faults=faults))
    if turns[-1].tool_calls:
        raise ScenarioError(f"{source}.turns[{len(turns) - 1}]: the last turn must be a text answer")
    offsets_raw = _need(data, "offsets", list, source)
    offsets = tuple(parse_offset(o, f"{source}.offsets[{i}]") for i, o in enumerate(offsets_raw))
    cod = data.get("commit_on_disconnect", True)
    if not isinstance(cod, bool):
        raise ScenarioError(f"{source}.commit_on_disconnect: expected true or false")
    variant_of = data.get("variant_of", "")
    if not isinstance(variant_of, str):
        raise ScenarioError(f"{source}.variant_of: expected the name of another scenario")
    observe = data.get("observe_ms", DEFAULT_OBSERVE_MS)
    if not isinstance(observe, (int, float)) or isinstance(observe, bool) or not 0 <= observe <= MAX_OBSERVE_MS:
        raise ScenarioError(f"{source}.observe_ms: expected milliseconds from 0 to {MAX_OBSERVE_MS:g}, "
                            f"got {observe!r}")
    try:
        billing = parse_billing(data.get("billing", DEFAULT_PROFILE.name), f"{source}.billing")
    except BillingError as e:
        raise ScenarioError(str(e)) from e
    try:
        model_rule = parse_model_rule(data.get("model_rule", DEFAULT_RULE.name), f"{source}.model_rule")
    except ModelRuleError as e:
        raise ScenarioError(str(e)) from e
    return Scenario(
        name=name,
        description=str(data.get("description", "")),
        prompt=str(data.get("prompt", "Do the job.")),
        turns=tuple(turns),
        ttft_ms=ttft,
        tokens_per_s=tps,
        latency_ms=latency,
        offsets=offsets,
        commit_on_disconnect=cod,
        variant_of=variant_of,
        observe_ms=float(observe),
        billing=billing,
        model_rule=model_rule,
        tools=declared,
        agent_tools=agent_tools,
        source=source,
        raw=data,
    )


def _faults(raw: Any, where: str) -> tuple[Fault, ...]:
    """`fault: {status: 429, retry_after_s: 1}`, `{status: 500}`, `{reset_after_tokens: 5}`, or a list of them
    (served to the turn's first requests in order)."""
    items = raw if isinstance(raw, list) else [raw]
    if len(items) > MAX_FAULTS_PER_TURN:
        raise ScenarioError(f"{where}: {len(items)} faults; at most {MAX_FAULTS_PER_TURN} per turn")
    out = []
    for k, item in enumerate(items):
        w = f"{where}[{k}]" if isinstance(raw, list) else where
        if not isinstance(item, dict) or not item:
            raise ScenarioError(f"{w}: expected a mapping {{status, retry_after_s?}} or {{reset_after_tokens}}, "
                                f"got {item!r}")
        unknown = set(item) - {"status", "retry_after_s", "reset_after_tokens"}
        if unknown:
            raise ScenarioError(f"{w}: unknown field '{sorted(unknown)[0]}' (known: reset_after_tokens, "
                                "retry_after_s, status)")
        status, retry, reset = (item.get(k) for k in ("status", "retry_after_s", "reset_after_tokens"))
        if (status is None) == (reset is None):
            raise ScenarioError(f"{w}: a fault is either an HTTP error (`status`) or a dropped response "
                                "(`reset_after_tokens`), not both and not neither")
        if reset is not None:
            if not isinstance(reset, int) or isinstance(reset, bool) or not 0 <= reset <= MAX_TEXT_TOKENS:
                raise ScenarioError(f"{w}.reset_after_tokens: expected an integer from 0 to {MAX_TEXT_TOKENS}, "
                                    f"got {reset!r}")
            if retry is not None:
                raise ScenarioError(f"{w}.retry_after_s: only an HTTP error (`status`) has a Retry-After")
        else:
            if not isinstance(status, int) or isinstance(status, bool) or status not in FAULT_STATUSES:
                raise ScenarioError(f"{w}.status: expected 429 or a 5xx status, got {status!r}")
            if retry is not None and (not isinstance(retry, int) or isinstance(retry, bool)
                                      or not 0 <= retry <= MAX_RETRY_AFTER_S):
                raise ScenarioError(f"{w}.retry_after_s: expected whole seconds from 0 to {MAX_RETRY_AFTER_S} "
                                    f"(the Retry-After header), got {retry!r}")
        out.append(Fault(status=status, retry_after_s=retry, reset_after_tokens=reset))
    return tuple(out)


def _declared_tools(raw: Any, where: str) -> dict[str, DeclaredTool]:
    """`tools: {notify_team: {service: chat, parameters: [channel, message]}}`: the user's agent's own tools."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expected a mapping of tool name to {{service, parameters}}")
    out = {}
    for name, spec in raw.items():
        w = f"{where}.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise ScenarioError(f"{w}: a tool name is a Python-like identifier, got {name!r}")
        if name in TOOL_NAMES:
            raise ScenarioError(f"{w}: {name!r} is a built-in tool; give your own tool another name")
        if not isinstance(spec, dict) or set(spec) - {"service", "parameters"}:
            raise ScenarioError(f"{w}: expected a mapping with 'service' and 'parameters'")
        service = _need(spec, "service", str, w)
        if service not in SERVICE_KINDS:
            raise ScenarioError(f"{w}.service: {service!r} is not a service of the world (known: "
                                f"{', '.join(SERVICE_KINDS)})")
        params = _need(spec, "parameters", list, w)
        if not all(isinstance(p, str) and p.isidentifier() for p in params) or len(set(params)) != len(params):
            raise ScenarioError(f"{w}.parameters: expected a list of distinct parameter names, got {params!r}")
        out[name] = DeclaredTool(service, tuple(params))
    return out


def _agent_tools(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    """`agent_tools: {exec_command: [cmd, yield_time_ms]}`: built-in tools of the agent under test, by its names."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expected a mapping of tool name to its parameter names")
    out = {}
    for name, params in raw.items():
        w = f"{where}.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name) or name in TOOL_NAMES:
            raise ScenarioError(f"{w}: expected a tool name that is not a built-in tool of the harness")
        if not isinstance(params, list) or not all(isinstance(p, str) and p.isidentifier() for p in params):
            raise ScenarioError(f"{w}: expected a list of parameter names, got {params!r}")
        out[name] = tuple(params)
    return out


def load_scenario_file(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e}") from e
    except yaml.YAMLError as e:
        raise ScenarioError(f"{path}: not valid YAML: {e}") from e
    scenario = scenario_from_dict(data, source=str(path))
    if scenario.name != path.stem:
        raise ScenarioError(f"{path}.name: {scenario.name!r} must match the file name {path.stem!r}")
    return scenario


def load_scenarios(directory: Path = DEFAULT_SCENARIOS_DIR) -> dict[str, Scenario]:
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise ScenarioError(f"{directory}: no scenario files (*.yaml)")
    scenarios = {s.name: s for s in map(load_scenario_file, files)}
    for s in scenarios.values():
        if s.variant_of and s.variant_of not in scenarios:
            raise ScenarioError(f"{s.source}.variant_of: {s.variant_of!r} is not a scenario here (known: "
                                f"{', '.join(sorted(scenarios))})")
    return scenarios


def scenario_path(name: Any, directory: Path = DEFAULT_SCENARIOS_DIR) -> Path:
    """The file of a scenario named `name`: a name, never a path (nothing outside `directory` is read)."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]{1,64}", name):
        raise ScenarioError(f"scenario name {str(name)[:80]!r}: use 1 to 64 of a-z, 0-9 and _ (the file "
                            "scenarios/<name>.yaml)")
    return directory / f"{name}.yaml"


def resolve_scenario(spec: str | dict[str, Any], directory: Path = DEFAULT_SCENARIOS_DIR) -> Scenario:
    if isinstance(spec, dict):
        return scenario_from_dict(spec)
    path = scenario_path(spec, directory)
    if not path.exists():
        known = ", ".join(p.stem for p in sorted(directory.glob("*.yaml")))
        raise ScenarioError(f"unknown scenario {spec!r} (in {directory}: {known})")
    return load_scenario_file(path)
