"""The result row, declared once: every field with its type, unit, table label, aggregation, format, better
direction and meaning.

Whatever writes or reads rows reads this: the metrics register against it (harness/results/metrics.py),
`read_rows` checks rows with it, the report and `stopbench compare` take column labels and cells from it,
rows.csv orders its columns by it, every table writes a field's values with its formatters (`number`,
`median_text`, `text`), the scorecard ranks by its `better`, and README.md's field table is generated from it
(`python -m harness.results.schema` prints the table; `--update README.md` rewrites it in place).
pyperf's metadata registry and ann-benchmarks' `all_metrics` are the models.

Adding a field: declare it here with the value rows written before it get (`default`), bump SCHEMA_VERSION and
add its migration (`fields_added` in harness/results/migrations.py), write its metric in metrics.py and a unit test
on a synthetic ledger in tests/test_metrics.py, then regenerate the README's table. Changing what a stored field
means or where a fact lives is a new format version too, with its own migration function.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.clock import TRIGGER_TOLERANCE_MS
from harness.frameworks import adapter_name
from harness.providers import DEFAULT_PROVIDER
from harness.vocabulary import IN_PROCESS

#: the row format's version: rows of an older one are migrated when read (harness/results/migrations.py), rows
#: of a newer one are refused. Each change, a field added included, is a new version with its migration.
SCHEMA_VERSION = 3

Unit = Literal["ms", "s", "count", "bytes", "usd", "none"]
#: how a table cell summarizes a field over a group of rows: `median` (the median, or `med (lo..hi)` when
#: the rows disagree), `ratio` (`k/N` rows where it is true), `none` (not summarized)
Aggregation = Literal["median", "ratio", "none"]
#: which way a field is better (ann-benchmarks' `all_metrics`): `lower` (fewer tokens after the stop), `higher`
#: (resume reached the end), `none` (a fact, not a score); the scorecard ranks buttons by it
Better = Literal["lower", "higher", "none"]
#: who writes the field: the runner (provenance), the trial (status), the metrics (from the ledger), or
#: the report (derived from a row when tables are made; never stored)
Source = Literal["runner", "trial", "metrics", "report"]

TYPE_NAMES = {int: "int", float: "float", bool: "bool", str: "str", dict: "object"}
#: a table cell without a value: nothing measured it (never a 0)
NO_VALUE = "-"


@dataclass(frozen=True)
class Field:
    name: str
    type: type  # int | float | bool | str | dict
    meaning: str  # one line, as README.md's field table shows it
    group: str
    source: Source
    unit: Unit = "none"
    label: str = ""  # the report's column label; empty: the field is shown by its name
    aggregation: Aggregation = "none"
    digits: int | None = None  # a median cell rounds each value to this many decimals first
    #: how a summarized number of the field is written (a median, a bound, a percentile): a format spec,
    #: `g` = every digit it has (after `digits`)
    spec: str = "g"
    better: Better = "none"
    nullable: bool = False  # None = "could not be measured" (the step never happened), never 0
    required: bool = False  # a row without it is unreadable
    #: the value of a row written before the field existed (applied by read_rows)
    default: Callable[[dict[str, Any]], Any] | None = None
    #: a timing that a late stop distorts: table medians leave out rows whose stop fired late
    #: (`trigger_precise` false); their counts stay in every count
    precise_only: bool = False

    @property
    def short(self) -> str:
        return self.label or self.name

    # --- how the field's values read in a table (pyperf keeps the formatter with the metadata's type) -------

    def number(self, v: Any) -> str:
        """A summarized number of the field (a median, a bound, a percentile) as `spec` writes it."""
        return NO_VALUE if v is None else format(v, self.spec)

    def median_text(self, med: Any, lo: Any, hi: Any) -> str:
        """A median cell: the value when every row agrees, else `median (min..max)`."""
        return self.number(lo) if lo == hi else f"{self.number(med)} ({self.number(lo)}..{self.number(hi)})"

    def range_text(self, lo: Any, hi: Any) -> str:
        return f"{self.number(lo)}..{self.number(hi)}"

    def text(self, v: Any) -> str:
        """One value (a trial's, a scorecard's median) as a page shows it: `-` when not measured, yes/no, a
        number to `digits` decimals below 100 (a page lists thousands of them), else every digit."""
        if v is None or v != v:  # None or NaN
            return NO_VALUE
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            short = self.digits is not None and v != int(v) and abs(v) < 100
            return f"{v:.{self.digits}f}" if short else f"{v:g}"
        return str(v)

    def rank(self, v: Any) -> float:
        """`v` as a sort key that puts the better value first (`better`); no value sorts last."""
        if self.better == "none":
            raise ValueError(f"{self.name!r} has no better direction to rank by")
        if v is None or v != v:
            return math.inf
        return float(v) if self.better == "lower" else -float(v)

    def type_error(self, value: Any) -> str | None:
        """Why `value` is not a value of this field, or None."""
        if value is None:
            return None if self.nullable else "is null"
        number = isinstance(value, (int, float)) and not isinstance(value, bool)  # in Python a bool is an int
        if self.type is float:
            ok = number  # a float field takes an int (100 for 100.0)
        elif self.type is int:
            ok = number and isinstance(value, int)
        else:
            ok = isinstance(value, self.type)
        if ok:
            return None
        want = TYPE_NAMES[self.type] + (" or null" if self.nullable else "")
        return f"is {type(value).__name__} {value!r:.40}, expected {want}"


def framework_of(row: dict[str, Any]) -> str:
    """Rows written before `framework` existed: the built-in folder of adapter_ref's `adapters.<folder>.`
    module (named as built-in adapters are: `adapter_name`), else the adapter's name."""
    m = re.match(r"(?:stopbench\.)?adapters\.(\w+)\.", str(row.get("adapter_ref") or ""))
    return adapter_name(m.group(1)) if m else row["adapter"]


def _fields() -> Iterable[Field]:
    def runner(name, typ, meaning, **kw):
        return Field(name, typ, meaning, "provenance", "runner", **kw)

    yield runner("schema_version", int, "the row format's version: an older row is migrated when read "
                 "(harness/results/migrations.py), a newer one refused", required=True)
    yield runner("trial_id", str, "adapter, mode, scenario@hash, offset, tool style, mitigation (host, provider, "
                 "billing profile when not the default), repetition: what a rerun skips", required=True)
    yield runner("adapter_digest", str, "digest of the adapter's folder (its Python files, framework.toml, "
                 "constraints.txt): with `versions`, the code the row was measured on; a bench reruns a trial whose "
                 "row has another (harness/trial/staleness.py; rows written before it existed have none: stale)")
    yield runner("adapter", str, "the adapter's declared name (what tables show)", required=True)
    yield runner("adapter_ref", str, "how the adapter was loaded: built-in name, entry point or `package.module:Class`")
    yield runner("framework", str, "the framework the adapter measures (claims are keyed by it); rows written "
                 "before it existed: the folder of adapter_ref's `adapters.<folder>.` module, else `adapter`",
                 default=framework_of)
    yield runner("mode", str, "the stop mode: which of the framework's stop buttons was pressed", required=True)
    yield runner("scenario", str, "the scripted job (`scenarios/<name>.yaml`)", required=True)
    yield runner("scenario_hash", str, "hash of the scenario's content: rows of two versions never mix")
    yield runner("offset", str, "when the stop was pressed: `at:<N>ms` after the run started, or an event anchor "
                 "`on:...`", required=True)
    yield runner("offset_kind", str, "`time` or `event`")
    yield runner("tool_style", str, "how the tools were given to the framework: `sync`, `async` or `mcp`")
    yield runner("mcp_launch", str, "how the MCP server was launched (harness/tools/mcp_launch.py): `direct` (as "
                 "the docs show it; every row without MCP tools too) or a variant of the orphan matrix: "
                 "`launcher`, `deaf`, `stubborn`. Trial ids and tables write a variant as `mcp+<launch>`; rows "
                 "written before it existed carried it that way in tool_style and are split when read")
    yield runner("mitigation", str, "the harness-side mitigation: `none`, `saga`, `idempotent`, `saga+idempotent`")
    yield runner("host", str, "what the app hosting the agent did after the stop: `close` (resume, then close()) "
                 "or `crash` (SIGKILLed without cleanup, as a crash or an OOM kill)", default=lambda row: "close")
    yield runner("serve_path", str, "how the run was served and stopped (harness/trial/serve/paths.py): "
                 "`in-process` (no server: the harness pressed the framework's button in its own process; rows "
                 "written before it existed) or a server the trial started, stopped by its client "
                 "(`starlette-sse`...)",
                 default=lambda row: IN_PROCESS)
    yield runner("client_stop", str, "a served trial's client stop: `disconnect`, `cancel_endpoint`, `abort_fetch` "
                 "(the chat page's Stop in a browser); null in-process", default=lambda row: None, nullable=True)
    yield runner("provider", str, "the model provider the trial talked to, through the framework's own client for "
                 "it (harness/providers.py): `openai`, `anthropic` or `gemini`; rows written before it existed: "
                 "`openai`", default=lambda row: DEFAULT_PROVIDER)
    yield runner("rep", int, "repetition number")
    yield runner("seed", int, "the run's seed")
    yield runner("versions", dict, "the framework's packages and their versions")
    yield runner("sources", dict, "where the framework's packages came from when not from a package index (a "
                 "local checkout, a git ref, a wheel file; `stopbench compare` names them): package -> its PEP 610 "
                 "direct_url.json, as `url`, `path`, `ref`, `commit` (a checkout's HEAD), `editable`; empty for a "
                 "release (rows written before it existed: empty)", default=lambda row: {})
    yield runner("finished_at", str, "when the row was written (UTC, ISO 8601)")
    yield runner("python", str, "Python version")
    yield runner("platform", str, "operating system, kernel release, machine")
    yield runner("cpus", int, "CPUs of the machine", unit="count", nullable=True)
    yield runner("git_sha", str, "stopbench's commit (`-dirty` when the tree was modified)")
    yield runner("stopbench_version", str, "stopbench's version")
    yield runner("metrics_digest", str, "digest of the metric code the row's measured fields were derived with "
                 "(harness/results/metrics.py and this schema): `stopbench rederive` derives them again from the "
                 "evidence when it changes; rows written before it existed: null", default=lambda row: None,
                 nullable=True)
    yield runner("observe_ms", float, "the observation floor: the trial stayed alive and observed at least this "
                 "long after the stop and after resume returned (rows written before it existed: 0)", unit="ms",
                 default=lambda row: 0.0)

    def trial(name, typ, meaning, **kw):
        return Field(name, typ, meaning, "status", "trial", **kw)

    yield trial("status", str, "`ok`, `hung` (a step overran its deadline; what was measured is kept), `failed` "
                "(the adapter or framework raised), `runaway` (the run did not go quiet by the settle deadline "
                "after the observation floor; counts are cut there), `skipped` (the job ended before the offset). "
                "Never a silent 0.", required=True)
    yield trial("reason", str, "why the row is not `ok`: the step and what happened", nullable=True)
    yield trial("failed_step", str, "the trial step a `hung`, `failed` or `runaway` row went wrong in (`start`, "
                "`trigger`, `job`, `stop`, `wait`, `settle`, `resume`, `settle_resume`, `close`, ...); null when "
                "ok or skipped, or when no step is to blame (the subject crashed or exited). Rows written before "
                "it existed: read from their reason", nullable=True)
    yield trial("run_id", str, "the world's id for the run: every ledger entry of the trial carries it")
    yield trial("duration_s", float, "wall time of the whole trial", unit="s")
    yield trial("subject_cpu_s", float, "CPU time (user + system) of the subject process and the processes it "
                "waited for (MCP servers its framework ended), measured by the kernel at its exit", unit="s",
                nullable=True)

    def measured(name, typ, group, meaning, **kw):
        kw.setdefault("unit", "count" if typ is int else "none")
        kw.setdefault("aggregation", "median" if typ in (int, float) else "ratio" if typ is bool else "none")
        return Field(name, typ, meaning, group, "metrics", **kw)

    ms = {"unit": "ms", "nullable": True}
    yield measured("stop_return_ms", float, "stop", "how long `stop()` took to return", label="stop ms", digits=1,
                   precise_only=True, **ms, better="lower")
    yield measured("lie_ms", float, "stop", "from `stop()` returning to the last thing the world saw the run do "
                   "before resume: how long the button lies (0 = it told the truth)", label="lie ms", digits=1,
                   precise_only=True, **ms, better="lower")
    yield measured("stop_delivery_ms", float, "stop", "from the harness's press to the moment an adapter in "
                   "another process handled the stop (its kit stamps it before pressing the framework's primitive); "
                   "\"after stop\" counts from there, so the delivery is not taken for the framework's reaction; "
                   "null for an adapter in the subject's process and for rows written before it existed",
                   digits=1, default=lambda row: None, **ms)
    yield measured("served_stop_seen_ms", float, "stop", "a served trial: from the client's stop to the moment the "
                   "server reacted to it (the disconnect or the cancel seen, the framework's button pressed); null "
                   "when the server never reacted, and in-process", digits=1, default=lambda row: None, **ms)
    yield measured("served_run_ended", bool, "stop", "a served trial: the run's job in the server ended before the "
                   "row was cut (completed, cancelled or failed); false for a run the server left going; null "
                   "in-process", default=lambda row: None, nullable=True, better="higher")
    yield measured("served_run_ended_ms", float, "stop", "a served trial: from the client's stop to the end of the "
                   "run's job in the server; null when it never ended, and in-process", digits=1,
                   default=lambda row: None, **ms, better="lower")
    yield measured("job_ended_ms", float, "stop", "from the stop to the end of the framework's job",
                   precise_only=True, **ms, better="lower")
    yield measured("job_error", str, "stop", "what the job ended with when it raised (e.g. `CancelledError`)",
                   nullable=True)
    yield measured("exit_status", int, "stop", "orchestrator trials: how the process the user started ended, its exit "
                   "code or minus the signal that killed it (130 after Ctrl-C, -9 after SIGKILL); null otherwise",
                   default=lambda row: None, nullable=True)
    yield measured("close_ok", bool, "stop", "`close()` returned without an error", better="higher")

    n = {"nullable": True}  # None when the trial never reached the step that measures it
    yield measured("tokens_total", int, "model", "model tokens generated in the whole trial, resume included")
    yield measured("tokens_after_stop", int, "model", "model tokens generated, and billed, after the stop, under the "
                   "run's `billing_profile` (tokens generated after the client left included)", label="tokens+",
                   better="lower", **n)
    yield measured("tokens_unread_after_stop", int, "model", "of those, tokens the provider generated after the "
                   "client had left a stream (billed, never read; 0 under `stops_at_disconnect`)",
                   better="lower", default=lambda row: 0 if row.get("tokens_after_stop") is not None else None, **n)
    yield measured("billing_profile", str, "model", "what the provider bills after a streamed answer's client left "
                   "(harness/billing.py): `stops_at_disconnect`, `runs_to_completion` or `runs_on_ms:N`; rows written "
                   "before it existed: `stops_at_disconnect`", default=lambda row: "stops_at_disconnect")
    yield measured("usage_reported_tokens", int, "model", "what the framework's own usage accounting said the stopped "
                   "run used, in output tokens, once the stop phase settled (`Adapter.reported_usage`): a number the "
                   "framework says about itself, never a measurement; null when it reports none, and for rows "
                   "written before it existed", default=lambda row: None, **n)
    yield measured("usage_unreported_tokens", int, "model", "output tokens the world generated for the stopped run "
                   "(before resume, unread ones included) less what the framework's usage said: what its usage "
                   "leaves off the bill; null when it reports none, and for rows written before it existed",
                   default=lambda row: None, better="lower", **n)
    yield measured("model_rule", str, "model", "how the world's model read a tool result that reports an interruption "
                   "or an error (harness/model_rule.py, the scenario's `model_rule`): `retry_interrupted_tools` (it "
                   "asks for the same call again) or `count_results` (it counts results, whatever they say); rows "
                   "written before it existed: `count_results`", default=lambda row: "count_results")
    yield measured("model_retries", int, "model", "calls the model asked for again because their result read as "
                   "interrupted or as an error (the ledger's `tool_retry_asked`), resume included; rows written before "
                   "it existed: 0", default=lambda row: 0)
    yield measured("llm_requests_after_stop", int, "model", "model requests received after the stop", label="req+",
                   **n, better="lower")
    yield measured("llm_errors", int, "model", "scripted provider faults the run was served (a 429, a 5xx, a dropped "
                   "stream: harness/world/faults.py), all before the stop", default=lambda row: 0)
    yield measured("llm_requests_near_stop", int, "model", "of those, requests that reached the world within "
                   "`SEND_LAG_MS` (harness/clock.py) of the press: they carry no send stamp and may have left "
                   "before it",
                   default=lambda row: None, **n)

    yield measured("effects_committed_total", int, "effects", "side effects committed in the whole trial")
    yield measured("effects_after_stop", int, "effects", "side effects committed after the stop (received before "
                   "resume)", **n, better="lower")
    yield measured("effects_in_flight", int, "effects", "effects committed after the stop whose request was "
                   "sent before it (in flight; the tools' send stamp, else the receipt)", label="in flight",
                   better="lower", **n)
    yield measured("effects_in_flight_client_gone", int, "effects", "of the effects in flight, those whose client "
                   "had gone (the tool call's request was cancelled) when the service committed them: the cancel "
                   "reached the tool; rows written before it existed: null (`stopbench rederive` fills it from the "
                   "evidence)", label="in flight, client gone", better="higher", default=lambda row: None, **n)
    yield measured("effects_new", int, "effects", "effects committed after the stop whose request was sent after "
                   "it (new)", label="new", **n, better="lower")
    yield measured("effects_after_stop_by_kind", dict, "effects", "effects_after_stop by kind (`email`, `pr`, "
                   "`calendar`, `chat`)", **n)
    yield measured("effects_compensated", int, "effects", "effects committed after the stop and compensated "
                   "(recalled, closed, cancelled, deleted)", label="compensated",
                   better="lower", **n)
    yield measured("effects_leaked", int, "effects", "effects committed after the stop and never compensated",
                   label="leaked", **n, better="lower")
    yield measured("effects_aborted", int, "effects", "side effects received and never committed")
    yield measured("effect_duplicate_attempts", int, "effects", "calls answered from an earlier call with the same "
                   "`Idempotency-Key`")

    yield measured("threads_left", int, "alive", "new threads left after the stop, once the run was over, other "
                   "than idle pools and event loops (harness/trial/activity.py)", label="threads", **n, better="lower")
    yield measured("idle_pool_threads", int, "alive", "new threads a process keeps idle: an executor's worker "
                   "parked in its queue, an event loop parked in its selector with nothing scheduled (counted apart: "
                   "they run nothing)", **n)
    yield measured("tasks_left", int, "alive", "new asyncio tasks left after the stop", **n, better="lower")
    yield measured("children_left", int, "alive", "child processes left after the stop", **n, better="lower")
    yield measured("sockets_left", int, "alive", "new open sockets left after the stop", **n, better="lower")
    yield measured("orphans", int, "alive", "processes of the run alive after `close()` (the harness reaped them); "
                   "null in a host crash trial (no close)", label="orphans", **n, better="lower")
    yield measured("orphan_rss_bytes", int, "alive", "the orphans' resident memory", unit="bytes", **n, better="lower")
    yield measured("orphan_cpu_s", float, "alive", "CPU seconds the orphans had used when the harness reaped them",
                   unit="s", default=lambda row: None, **n, better="lower")
    yield measured("crash_orphans", int, "alive", "host crash trials: processes of the run still running an "
                   "observation window after the host (the subject) was SIGKILLed; null when the host closed",
                   label="crash orphans", default=lambda row: None, **n, better="lower")
    yield measured("crash_orphan_rss_bytes", int, "alive", "their resident memory at the window's end", unit="bytes",
                   default=lambda row: None, **n, better="lower")
    yield measured("crash_orphan_cpu_s", float, "alive", "CPU seconds they burned in the window", unit="s",
                   default=lambda row: None, **n, better="lower")
    yield measured("survivors_5s", int, "alive", "census trials (an orchestrator CLI): processes of the run alive "
                   "5 s after the stop (the CLI itself, its native binary, MCP servers, shell children); null "
                   "without a census (harness/trial/census.py)", label="alive 5 s", default=lambda row: None,
                   **n, better="lower")
    yield measured("survivors_30s", int, "alive", "census trials: processes of the run alive 30 s after the stop",
                   label="alive 30 s", default=lambda row: None, **n, better="lower")
    yield measured("survivors_30s_rss_bytes", int, "alive", "census trials: the resident memory of those alive 30 s "
                   "after the stop", unit="bytes", default=lambda row: None, **n, better="lower")
    yield measured("survivors_30s_cpu_s", float, "alive", "census trials: CPU seconds those alive 30 s after the "
                   "stop burned since the 5 s count (their whole use, for one not seen then)", unit="s",
                   default=lambda row: None, **n, better="lower")
    yield measured("reaped", int, "alive", "processes the harness had to kill", better="lower")
    yield measured("egress_attempts", int, "alive", "connection or DNS attempts to anything but loopback (Python "
                   "audit hook in the subject)", **n, better="lower")
    yield measured("unattributed_requests", int, "alive", "reserved for requests that named no known run (the "
                   "runner reports those per run, not per row: always null)", **n)

    yield measured("resume_ok", bool, "resume", "`resume()` returned and the run reached its final answer; null "
                   "without a resume", label="resume ok", nullable=True, better="higher")
    yield measured("resume_error", str, "resume", "what `resume()` raised; `no resume` when the adapter has none",
                   nullable=True)
    yield measured("resume_llm_requests", int, "resume", "model requests received while resuming", **n)
    yield measured("resume_llm_replays", int, "resume", "model requests while resuming for a turn the model "
                   "had already answered in full before it (asked again)", **n, better="lower")
    yield measured("resume_tokens", int, "resume", "model tokens spent resuming", **n)
    yield measured("resume_duplicate_effects", int, "resume", "logical effects (kind + arguments) committed before "
                   "`resume_started` that the resume committed again, each counted once, compensated ones left out "
                   "(a call's phase is when the world received it); null when no resume started", label="dup",
                   better="lower", **n)
    yield measured("retry_duplicate_effects", int, "resume", "extra copies of a logical effect committed (not "
                   "compensated) within one phase, before the resume or within it: the agent retried a call, the "
                   "resume did not repeat it; rows written before it existed: null", label="retry dup",
                   default=lambda row: None, **n, better="lower")

    yield measured("trigger_delay_ms", float, "trigger", "from the anchor event (or the planned time) to "
                   "`stop_called`: the harness's precision", label="trigger ms", spec=".2f", **ms, better="lower")
    yield measured("trigger_precise", bool, "trigger", f"the stop fired within {TRIGGER_TOLERANCE_MS:g} ms "
                   "(harness.clock.TRIGGER_TOLERANCE_MS) of its moment; false = fired late under load: counted, "
                   "and left out of timing medians", label="precise", nullable=True,
                   default=lambda row: None if row.get("trigger_delay_ms") is None
                   else row["trigger_delay_ms"] <= TRIGGER_TOLERANCE_MS, better="higher")

    yield Field("cancel_tax_usd", float, "what the stop cost after it was pressed: tokens after stop, "
                "compensations, orphan memory x time and each leaked effect undone by hand, priced by "
                "data/prices.yaml (computed by the report, not stored)", "cost", "report", unit="usd",
                label="tax $", aggregation="median", digits=3, spec=".3f", better="lower")


FIELDS: dict[str, Field] = {f.name: f for f in _fields()}
#: the fields a stored row has (everything but what the report derives)
STORED = tuple(f.name for f in FIELDS.values() if f.source != "report")
MEASURED = tuple(f.name for f in FIELDS.values() if f.source == "metrics")
REQUIRED = tuple(f.name for f in FIELDS.values() if f.required)


def ratio_text(k: int, n: int) -> str:
    """A ratio cell: `k/N` rows where the field is true."""
    return f"{k}/{n}"


def field(name: str) -> Field:
    try:
        return FIELDS[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a row field (harness/results/schema.py declares them)") from None


def label(name: str) -> str:
    return field(name).short


def problems(row: dict[str, Any]) -> list[str]:
    """What is wrong with a row of this schema: missing required fields, then values of the wrong type.
    Fields this schema does not declare are let through (a newer stopbench may add some)."""
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    return [f"field {name!r} {err}" for name, value in row.items()
            if name in FIELDS and (err := FIELDS[name].type_error(value))]


def with_defaults(row: dict[str, Any]) -> dict[str, Any]:
    """The row, with the declared default of every field it was written without."""
    for f in FIELDS.values():
        if f.default is not None and f.name not in row:
            row[f.name] = f.default(row)
    return row


def columns(present: Iterable[str]) -> list[str]:
    """Column order for a table of rows: declared fields in schema order, then any others, sorted."""
    present = list(present)
    return [k for k in FIELDS if k in present] + sorted(k for k in present if k not in FIELDS)


# --- README.md's field table ---------------------------------------------------------------------------------

TABLE_BEGIN = "<!-- row fields: generated from harness/results/schema.py by `python -m harness.results.schema " \
              "--update README.md`; do not edit by hand -->"
TABLE_END = "<!-- end of row fields -->"


def markdown_table() -> str:
    """The field table README.md shows under "How to read a row", between its two markers."""
    lines = [TABLE_BEGIN, "", "| group | field | type | unit | column | better | meaning |", "|" + " --- |" * 7]
    group = None
    for f in FIELDS.values():
        typ = TYPE_NAMES[f.type] + (" or null" if f.nullable else "")
        shown = "" if f.group == group else f.group
        group = f.group
        column = f"{f.label} ({f.aggregation})" if f.label else ""
        unit = "" if f.unit == "none" else f.unit
        better = "" if f.better == "none" else f.better
        lines.append(f"| {shown} | `{f.name}` | {typ} | {unit} | {column} | {better} | {f.meaning} |")
    return "\n".join([*lines, "", TABLE_END])


def update_readme(path: Path) -> bool:
    """Rewrite the table between the markers in `path`; True if it changed."""
    text = path.read_text()
    start, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END)
    new = text[:start] + markdown_table() + text[end:]
    path.write_text(new)
    return new != text


def main(argv: list[str]) -> int:
    if argv[:1] == ["--update"] and len(argv) == 2:
        changed = update_readme(Path(argv[1]))
        print(f"{argv[1]}: field table {'rewritten' if changed else 'already up to date'}")
        return 0
    if argv:
        print("usage: python -m harness.results.schema [--update README.md]", file=sys.stderr)
        return 2
    print(markdown_table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
