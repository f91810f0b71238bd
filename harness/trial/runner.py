"""Run a matrix of trials: one world, subjects forked from this (warm) process, rows appended as they land.

Progress goes to stderr, one line per trial; a summary table at the end. Ctrl-C ends every subject
and the world, keeps every finished row, and the next run with the same arguments does the rest.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

from harness.billing import BillingError, parse_billing
from harness.contract.adapter import Adapter
from harness.contract.registry import AdapterError
from harness.owner import stale_workroots, workroot_prefix
from harness.providers import PROVIDERS
from harness.results.evidence import append_evidence, evidence_file
from harness.results.repetitions import DEFAULT_REPS_RULE, FIRST, REPS_RULES, has_parallel_calls, needs_run
from harness.results.rows import (
    SCHEMA_VERSION,
    RawFileLock,
    adapter_raw_files,
    append_row,
    environment,
    now_iso,
    raw_file,
    read_rows,
)
from harness.results.selection import is_served
from harness.scenario import ANCHOR_KINDS, DEFAULT_SCENARIOS_DIR, Offset, Scenario, load_scenarios, parse_offset
from harness.tools.mcp_launch import DEFAULT_LAUNCH, LAUNCHES, tool_label
from harness.tools.mitigation import Mitigation
from harness.trial.concurrency import TRIGGER_TOLERANCE_MS, Concurrency
from harness.trial.janitor import Janitor
from harness.trial.serve.paths import IN_PROCESS, ServePathError, serve_path, serving_versions
from harness.trial.spec import HOSTS, Deadlines, Shard, TrialSpec
from harness.trial.staleness import adapter_digest, is_current
from harness.trial.trial import RunningTrial, warm_up
from harness.trial.utilization import Utilization, schedule_file
from harness.trial.world_client import WorldClient, WorldProcess


@dataclass
class RunOptions:
    adapter: str
    modes: list[str] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)
    offsets: list[Offset] = field(default_factory=list)
    tool_styles: list[str] = field(default_factory=list)
    mcp_launches: list[str] = field(default_factory=lambda: [DEFAULT_LAUNCH])  # for MCP tools (mcp_launch.py)
    hosts: list[str] = field(default_factory=lambda: ["close"])  # harness/trial/spec.py HOSTS
    serve_paths: list[str] = field(default_factory=lambda: [IN_PROCESS])  # harness/trial/serve/paths.py
    #: harness/providers.py; empty: the adapter's home provider (the first it declares)
    providers: list[str] = field(default_factory=list)
    #: the billing profile every trial's run plays in place of its scenario's (harness/billing.py); None: the
    #: scenario's
    billing: str | None = None
    mitigations: list[Mitigation] = field(default_factory=lambda: [Mitigation()])
    reps: int = 1
    jobs: int | None = 1  # None: auto (harness.trial.concurrency)
    out: Path = Path("results")
    scenarios_dir: Path = DEFAULT_SCENARIOS_DIR
    start_method: str = "fork"
    deadlines: Deadlines = field(default_factory=Deadlines)
    seed: int = 0
    keep_workdirs: bool = False
    settle_window_ms: float | None = None  # None: derived from the scenario (see trial.settle_window_ms)
    observe_ms: float | None = None  # None: the scenario's observation floor (harness.scenario.DEFAULT_OBSERVE_MS)
    shard: Shard | None = None  # run only this shard of the matrix
    anchors: str = "all"  # all | event | time: only the trials whose offset is of that kind (ANCHOR_KINDS)
    world_url: str | None = None  # a world already running (a test session's); None: start one for the run
    reps_rule: str = DEFAULT_REPS_RULE  # harness/results/repetitions.py REPS_RULES
    #: more matrices of the same adapter in the same run (one world, one queue: no pause between them); each
    #: these options with its own modes ... reps (`stopbench run --also`)
    also: list[RunOptions] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Parse at the edge, once: offsets and mitigations given as text become typed values here."""
        self.offsets = [o if isinstance(o, Offset) else parse_offset(o, "--offset") for o in self.offsets]
        self.mitigations = [m if isinstance(m, Mitigation) else Mitigation(m) for m in self.mitigations]
        if isinstance(self.shard, str):
            self.shard = Shard.parse(self.shard)
        if self.anchors not in ANCHOR_KINDS:
            raise AdapterError(f"anchors: {self.anchors!r} is none of {', '.join(ANCHOR_KINDS)}")
        for launch in self.mcp_launches:
            if launch not in LAUNCHES:
                raise AdapterError(f"mcp launch: {launch!r} is none of {', '.join(LAUNCHES)}")
        for host in self.hosts:
            if host not in HOSTS:
                raise AdapterError(f"host: {host!r} is none of {', '.join(HOSTS)}")
        for path in self.serve_paths:
            try:
                serve_path(path)
            except ServePathError as e:
                raise AdapterError(str(e)) from e
        for name in self.providers:
            if name not in PROVIDERS:
                raise AdapterError(f"provider: {name!r} is none of {', '.join(PROVIDERS)}")
        if self.billing is not None:
            try:
                self.billing = parse_billing(self.billing, "billing").name  # one spelling in trial ids
            except BillingError as e:
                raise AdapterError(str(e)) from e
        if self.reps_rule not in REPS_RULES:
            raise AdapterError(f"reps rule: {self.reps_rule!r} is none of {', '.join(REPS_RULES)}")


def plan(adapter_cls: type[Adapter], opts: RunOptions, scenarios: dict[str, Scenario]) -> list[TrialSpec]:
    """The matrix, validated: an unknown mode, scenario, offset or tool style is an AdapterError."""
    modes = opts.modes or list(adapter_cls.stop_modes)
    for m in modes:
        if m not in adapter_cls.stop_modes:
            raise AdapterError(f"adapter {opts.adapter!r} has no stop mode {m!r} "
                               f"(it has: {', '.join(adapter_cls.stop_modes)})")
    names = opts.scenarios or sorted(s for s in scenarios  # scenarios of the user's own tools: only when asked
                                     if (adapter_cls.runs_declared_tools or not scenarios[s].tools)
                                     and set(scenarios[s].agent_tools) <= set(adapter_cls.agent_tools))
    for s in names:
        if s not in scenarios:
            raise AdapterError(f"unknown scenario {s!r} (known: {', '.join(sorted(scenarios))})")
        missing = set(scenarios[s].agent_tools) - set(adapter_cls.agent_tools)
        if missing:
            raise AdapterError(f"scenario {s!r} scripts calls to an agent's built-in tools "
                               f"({', '.join(sorted(missing))}); adapter {opts.adapter!r} has none of those")
        if scenarios[s].tools and not adapter_cls.runs_declared_tools:
            raise AdapterError(f"scenario {s!r} scripts calls to its own tools ({', '.join(scenarios[s].tools)}); "
                               f"adapter {opts.adapter!r} brings the harness's tools, not those")
    styles = opts.tool_styles or list(adapter_cls.tool_styles)
    for st in styles:
        if st not in adapter_cls.tool_styles:
            raise AdapterError(f"adapter {opts.adapter!r} has no tool style {st!r} "
                               f"(it has: {', '.join(adapter_cls.tool_styles)})")
    providers = opts.providers or [adapter_cls.providers[0]]
    for name in providers:
        if name not in adapter_cls.providers:
            raise AdapterError(f"adapter {opts.adapter!r} has no client for provider {name!r} (it declares: "
                               f"{', '.join(adapter_cls.providers)}; `providers` in its framework.toml)")
    specs = []
    for scenario_name, mode, style, mit, host, provider, served, rep in itertools.product(
            names, modes, styles, opts.mitigations, opts.hosts, providers, opts.serve_paths, range(opts.reps)):
        launches = opts.mcp_launches if style == "mcp" else [DEFAULT_LAUNCH]  # only an MCP server is launched
        for offset, launch in itertools.product(opts.offsets or scenarios[scenario_name].offsets, launches):
            if opts.anchors not in ("all", offset.kind):
                continue
            specs.append(TrialSpec(opts.adapter, mode, scenario_name, offset, style, mit, rep, opts.seed,
                                   mcp_launch=launch, host=host, provider=provider, billing=opts.billing or "",
                                   serve_path=served))
    return take_shard(specs, opts.shard)


def take_shard(specs: list[TrialSpec], shard: Shard | None) -> list[TrialSpec]:
    """The shard's part of a plan; a cell's repetitions share a shard (the rule for later repetitions reads the
    first ones)."""
    return shard.take(specs, cell=lambda s: s.cell) if shard else specs


def plan_all(adapter_cls: type[Adapter], opts: RunOptions, scenarios: dict[str, Scenario]) -> list[TrialSpec]:
    """The run's matrix and each `also` matrix, in that order, every trial once. A shard is taken of their union:
    a trial two matrices share (the orphan matrix's direct launch is a cell of the main one) is in one shard."""
    planned = [s for o in (opts, *opts.also) for s in plan(adapter_cls, replace(o, shard=None), scenarios)]
    return take_shard(list({s.trial_id(scenarios[s.scenario].digest): s for s in planned}.values()), opts.shard)


def run_matrix(adapter_cls: type[Adapter], opts: RunOptions, log: TextIO = sys.stderr) -> list[dict[str, Any]]:
    scenarios = load_scenarios(opts.scenarios_dir)
    specs = plan_all(adapter_cls, opts, scenarios)
    out_file = raw_file(opts.out, adapter_cls.name)
    with RawFileLock(out_file):
        return _run_locked(adapter_cls, opts, scenarios, specs, out_file, log)


def _run_locked(adapter_cls: type[Adapter], opts: RunOptions, scenarios: dict[str, Scenario], specs: list[TrialSpec],
                out_file: Path, log: TextIO) -> list[dict[str, Any]]:
    # the newest row per trial, published (the dataset) or not (the run's own lines)
    rows_there, unreadable = read_rows(adapter_raw_files(opts.out, adapter_cls.name))
    digest, versions, sources = adapter_digest(adapter_cls), adapter_cls.versions(), adapter_cls.sources()
    done = {r["trial_id"] for r in rows_there
            if is_current(r, digest, trial_versions(versions, is_served(r)), sources)}
    for bad in unreadable:
        print(f"stopbench: unreadable line skipped (its trial runs again): {bad}", file=log, flush=True)
    todo = [s for s in specs if s.trial_id(scenarios[s.scenario].digest) not in done]
    planned = {s.trial_id(scenarios[s.scenario].digest) for s in todo}
    rerun = sum(1 for r in rows_there if r["trial_id"] in planned)
    known = {r["trial_id"]: r for r in rows_there if r["trial_id"] in done}
    later = LaterRepetitions(todo, scenarios, known) if opts.reps_rule == "agree" else None
    queue = [s for s in todo if later is None or s not in later.waiting]
    if later is not None:
        queue += later.release()  # those whose cells' first repetitions are already in the file: decided now
    print(plan_line(opts, len(specs), len(specs) - len(todo), rerun, out_file, len(queue), later, rows_there),
          file=log, flush=True)
    if not queue and (later is None or not later.waiting):
        return []
    os.environ.update(adapter_cls.environment)
    adapter_cls.prepare()
    env = {**environment(), "adapter_digest": digest, "sources": sources}
    for stale in stale_workroots():  # left by a runner killed outright
        shutil.rmtree(stale, ignore_errors=True)
    workroot = Path(tempfile.mkdtemp(prefix=workroot_prefix(opts.adapter)))
    janitor = None if opts.keep_workdirs else Janitor(workroot)  # the folder goes, also if this runner is killed
    rows: list[dict[str, Any]] = []
    running: list[tuple[TrialSpec, RunningTrial]] = []
    started = time.monotonic()
    concurrency = Concurrency(opts.jobs)
    utilization = Utilization(schedule_file(opts.out, adapter_cls.name))
    try:
        with _world(opts) as world:
            client = WorldClient(world.url)
            try:
                warm_up(world.url)
                _loop(queue, later, len(queue) + len(later.waiting if later else []), running, rows, concurrency,
                      opts, scenarios, adapter_cls, client, workroot, out_file, versions, env, log, started,
                      utilization)
                if later is not None and later.skipped:
                    print(f"stopbench: reps rule agree: {later.skipped} later repetition(s) not run (their cells' "
                          f"first {FIRST} agree)", file=log, flush=True)
            except BaseException as e:
                # any way out (Ctrl-C, SIGTERM, an error of ours): end the running trials while the world still
                # answers, so their ledgers are read and every process of theirs is found and ended
                for _, trial in running:
                    trial.kill()
                    trial.finish_quietly()
                if isinstance(e, KeyboardInterrupt):
                    print(f"\nstopbench: interrupted; {len(rows)} new row(s) kept in {out_file}; "
                          "run the same command again to finish the rest", file=log, flush=True)
                raise
            unattributed = client.http.get(f"{world.url}/unattributed").json()
            if unattributed:
                print(f"stopbench: {len(unattributed)} request(s) named no known run", file=log)
            client.close()
    finally:
        if janitor is not None:
            shutil.rmtree(workroot, ignore_errors=True)
            janitor.done()
    print_summary(rows, log)
    if concurrency.late:
        print(f"stopbench: {concurrency.late} stop(s) fired more than {TRIGGER_TOLERANCE_MS:g} ms late "
              f"(jobs {concurrency}); their rows say trigger_precise false and their timings stay out of "
              "the medians", file=log, flush=True)
    return rows


#: a trial's wall time for the estimate when the file has no row of the adapter to take it from
DEFAULT_TRIAL_S = 2.0


def plan_line(opts: RunOptions, planned: int, current: int, rerun: int, out_file: Path, queued: int,
              later: LaterRepetitions | None, rows_there: list[dict[str, Any]]) -> str:
    """One line: how many trials this run will run and about how long that takes, or that it has nothing to do;
    then the rest of the plan (rows already current, rows measured on other code, repetitions not needed)."""
    waiting = len(later.waiting) if later else 0
    skipped = later.skipped if later else 0
    parts = [f"{planned} planned", f"{current} current in {out_file}"]
    if rerun:
        parts.append(f"{rerun} there measured on other code (versions, sources or adapter digest): run again")
    if skipped:
        parts.append(f"{skipped} later repetition(s) not needed: their cells' first {FIRST} agree")
    if not queued and not waiting:
        return f"stopbench: {opts.adapter}: 0 trials to run: every cell's rows are current ({'; '.join(parts)})"
    durations = sorted(float(r["duration_s"]) for r in rows_there if r.get("duration_s"))
    trial_s = durations[len(durations) // 2] if durations else DEFAULT_TRIAL_S
    side_by_side = opts.jobs or os.cpu_count() or 1  # auto starts with one trial per core
    minutes = max(1, round((queued + waiting) * trial_s / side_by_side / 60))
    upto = f", {waiting} of them only if their cells' first {FIRST} disagree" if waiting else ""
    jobs = f"jobs={'auto' if opts.jobs is None else opts.jobs}{f', shard {opts.shard}' if opts.shard else ''}"
    return (f"stopbench: {opts.adapter}: {queued + waiting} to run{upto}, about {minutes} min ({trial_s:.1f} s a "
            f"trial, {jobs}; {'; '.join(parts)})")


@contextlib.contextmanager
def _world(opts: RunOptions):
    """The run's world: one started for it (and ended with it), or the one at `opts.world_url`."""
    if opts.world_url:
        yield SimpleNamespace(url=opts.world_url.rstrip("/"))
        return
    with WorldProcess(opts.scenarios_dir) as world:
        yield world


def _loop(queue: list[TrialSpec], later: LaterRepetitions | None, total: int,
          running: list[tuple[TrialSpec, RunningTrial]],
          rows: list[dict[str, Any]], concurrency: Concurrency, opts: RunOptions, scenarios: dict[str, Scenario],
          adapter_cls: type[Adapter], client: WorldClient, workroot: Path, out_file: Path, versions: dict[str, str],
          env: dict[str, Any], log: TextIO, started: float, utilization: Utilization) -> None:
    """Start trials while there is room, finish each as it ends, append its row at once (`total`: the trials of
    the run, for the progress lines; `later`: repetitions that wait for their cells' first ones)."""
    if later is not None:
        queue += later.release()
    while queue or running:
        held: str | None = None if queue else "tail"
        while queue:
            index = concurrency.pick([not s.offset.is_event for s in queue], [t.slot for _, t in running])
            if index is None:
                held = "timed" if concurrency.admits([t.observing for _, t in running]) else "limit"
                break
            spec = queue.pop(index)
            running.append((spec, RunningTrial(spec, scenarios[spec.scenario], adapter_cls, client, workroot,
                                               opts.deadlines, opts.start_method, opts.settle_window_ms,
                                               opts.observe_ms)))
        for item in list(running):
            spec, trial = item
            if not trial.poll():
                continue
            running.remove(item)
            row = _row(spec, adapter_cls, scenarios[spec.scenario], trial.finish(), versions, env)
            append_row(out_file, row)
            append_evidence(evidence_file(opts.out, adapter_cls.name), row["trial_id"], row["run_id"], trial.events,
                            trial.output)
            rows.append(row)
            concurrency.observe(row)
            if later is not None:
                later.known[row["trial_id"]] = row
                skipped = later.skipped
                queue += later.release()
                total -= later.skipped - skipped
            _progress(log, len(rows), total, row, started)
        observing = sum(t.observing for _, t in running)
        utilization.sample(len(running) - observing, observing, len(queue), held)
        if running:  # wake as soon as a subject writes or exits (its pipe closes), else every 20 ms
            select.select([t.read_fd for _, t in running], [], [], 0.02)


class LaterRepetitions:
    """Under the `agree` rule: the repetitions whose running depends on their cells' first ones (event-anchored,
    no parallel calls, past the first FIRST), each released (to run) or dropped as soon as those have rows, so
    the run never waits for all first repetitions to end."""

    def __init__(self, todo: list[TrialSpec], scenarios: dict[str, Scenario], known: dict[str, dict[str, Any]]):
        self.scenarios = scenarios
        self.known = known  # rows by trial id: the run's so far, and the current ones already in the out folder
        self.waiting = [s for s in todo if s.rep >= FIRST and s.offset.is_event
                        and not has_parallel_calls(scenarios[s.scenario])]
        self.pending = {s.trial_id(scenarios[s.scenario].digest) for s in todo} - set(known)
        self.skipped = 0

    def release(self) -> list[TrialSpec]:
        """The waiting repetitions that run, now that their cells' first ones have rows (or will never have)."""
        out, still = [], []
        for spec in self.waiting:
            scenario = self.scenarios[spec.scenario]
            ids = [replace(spec, rep=r).trial_id(scenario.digest) for r in range(FIRST)]
            if any(i in self.pending and i not in self.known for i in ids):
                still.append(spec)
            elif needs_run(spec.rep, True, False, [self.known.get(i) for i in ids]):
                out.append(spec)
            else:
                self.skipped += 1
        self.waiting = still
        return out


def trial_versions(versions: dict[str, str], served: bool) -> dict[str, str]:
    """A row's `versions`: the framework's, and for a served trial the serving stack's beside them; a bench
    compares a row against the same, so a served row of these versions is current."""
    return {**versions, **(serving_versions() if served else {})}


def _row(spec: TrialSpec, adapter_cls: type[Adapter], scenario: Scenario, measured: dict[str, Any],
         versions: dict[str, str], env: dict[str, Any]) -> dict[str, Any]:
    """One row, its fields as harness/results/schema.py declares them. `adapter` is the adapter's declared name
    (what tables show), `adapter_ref` how it was loaded, `framework` the framework it measures (claims)."""
    return {
        "schema_version": SCHEMA_VERSION, "trial_id": spec.trial_id(scenario.digest), "adapter": adapter_cls.name,
        "adapter_ref": spec.adapter, "framework": adapter_cls.framework_name(),
        "mode": spec.mode, "scenario": spec.scenario, "scenario_hash": scenario.digest, "offset": spec.offset.text,
        "offset_kind": spec.offset.kind, "tool_style": spec.tool_style,
        "mcp_launch": spec.mcp_launch,
        "mitigation": spec.mitigation.name, "host": spec.host, "provider": spec.provider,
        "serve_path": spec.serve_path,
        "client_stop": path.client_stop if (path := serve_path(spec.serve_path)) else None,
        "rep": spec.rep, "seed": spec.seed, "versions": trial_versions(versions, path is not None),
        "finished_at": now_iso(), **env, **measured,
    }


#: the fields the progress lines and the end-of-run summary show, under their schema labels
CONSOLE_FIELDS = ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "lie_ms", "orphans")


def _progress(log: TextIO, n: int, total: int, row: dict[str, Any], started: float) -> None:
    from harness.results.schema import label

    elapsed = time.monotonic() - started
    eta = elapsed / n * (total - n)
    shown = [*CONSOLE_FIELDS[:-1], "crash_orphans"] if row.get("host") == "crash" else CONSOLE_FIELDS
    detail = (", ".join(f"{label(k)} {row.get(k)}" for k in shown) if row["status"] == "ok"
              else (row.get("reason") or ""))
    host = " host crash" if row.get("host") == "crash" else ""
    mitigation = f" mitigation {row['mitigation']}" if row.get("mitigation", "none") != "none" else ""
    print(f"[{n}/{total} {elapsed:5.0f}s eta {eta:4.0f}s] {row['status']:<7} {row['mode']} "
          f"{row['scenario']} {row['offset']} {tool_label(row['tool_style'], row['mcp_launch'])}{host}{mitigation} "
          f"r{row['rep']}: {detail}", file=log, flush=True)


def print_summary(rows: list[dict[str, Any]], log: TextIO) -> None:
    if not rows:
        return
    from harness.results import schema
    from harness.results.schema import label

    statuses = Counter(r["status"] for r in rows)
    print("\nstatus: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())), file=log)
    width = {k: max(len(label(k)), 6) + 2 for k in CONSOLE_FIELDS}
    print(f"{'mode':<22}{'trials':>7}{'ok':>5}" + "".join(f"{label(k):>{width[k]}}" for k in CONSOLE_FIELDS), file=log)
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_mode.setdefault(r["mode"], []).append(r)
    for mode, rs in by_mode.items():
        ok = [r for r in rs if r["status"] == "ok"]

        def med(key: str, rows: list[dict[str, Any]] = ok) -> str:
            vals = [r[key] for r in rows if r.get(key) is not None]
            return schema.field(key).number(statistics.median(vals) if vals else None)

        cells = "".join(f"{med(k):>{width[k]}}" for k in CONSOLE_FIELDS)
        print(f"{mode:<22}{len(rs):>7}{len(ok):>5}{cells}", file=log)
    print("(medians over ok trials)", file=log, flush=True)
