"""An adapter in another language: a process that speaks the adapter protocol (docs/adapter-protocol.md), behind one
kit adapter class, so the trial, the audits, the subreaper, the world and every metric stay what they are.

`ProtocolAdapter` starts the adapter process as a child of the subject (its children, an MCP server its framework
starts, are the subject's descendants, found as always), sends it the trial's context, forwards the stop (a `stop`
request, or a signal for a mode that declares one), and turns its `audit` answer into what the audit counts
(`held()`; harness/trial/host.py). Nothing the process says is measured: effects, tokens and requests come from the
world's ledger, the moments from the trial's marks, what is left from the audits.

A framework folder declares such an adapter in framework.toml (`[protocol] command = [...]`); `protocol_adapter()`
makes its class, with the folder's declarations, and `probe()` starts the process once (capabilities and versions)
before any trial. The declaration is stated once, in framework.toml (or, for a class outside a framework folder, its
class attributes): the process gets it in its environment (DECLARATION_ENV, `handed_over()`), and its capabilities
must say it back, field by field, or it is refused up front.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.contract.adapter import Adapter, HostHoldings, NoResume
from harness.contract.kit import NEXT_INPUT
from harness.contract.wire import (
    FAILED,
    NO_RESUME,
    PROTOCOL_VERSION,
    AdapterFailed,
    Connection,
    ProtocolError,
    check_result,
)
from harness.frameworks import DECLARED, MANIFEST, STOP_SIGNALS, TOOL_STYLES, Framework
from harness.providers import DEFAULT_PROVIDER, PROVIDERS
from harness.stop_button import NOT_SENT
from harness.tools.catalogue import COMPENSATION_PATH, TOOL_KIND, TOOL_SPECS, json_schema
from harness.tools.mitigation import CallKeys, KeyPolicy

__all__ = ["FAILED", "NO_RESUME", "AdapterFailed", "ProtocolAdapter", "ProtocolError", "protocol_adapter"]

#: from the start of the process to its capabilities message
CAPABILITIES_S = 10.0
#: for an answer to `audit` (the settle step asks every few ms)
AUDIT_S = 1.0
#: for the probe: capabilities, versions and close of a process started only to ask them
PROBE_S = 30.0
#: after the answer to `close` and the end of its stdin, for the process to exit on its own
EXIT_S = 2.0
#: the signals a stop mode may declare (framework.toml [stop_signals]), by name
SIGNALS = {name: signal.Signals[name] for name in STOP_SIGNALS}
#: the environment variable that hands the process its declaration (`handed_over()`, as JSON)
DECLARATION_ENV = "STOPBENCH_DECLARATION"
#: the adapter process's stderr, in the trial folder
STDERR_FILE = "adapter-stderr.log"


@dataclass(frozen=True)
class Capabilities:
    """What the process says of itself in its first message."""

    name: str
    stop_modes: dict[str, str]
    signals: dict[str, str] = field(default_factory=dict)  # mode -> the signal the harness sends for it
    resume_primitive: str = ""
    tool_styles: tuple[str, ...] = ()
    unsupported: dict[tuple[str, str], str] = field(default_factory=dict)
    asks_stop_button: bool = False
    #: the process notifies `stop_handled` with the moment it handled a stop (the Node kit's serve() does)
    notifies_stop_handled: bool = False
    #: the model providers it has clients for (harness/providers.py), its home one first
    providers: tuple[str, ...] = (DEFAULT_PROVIDER,)


def _expect(cond: bool, where: str, name: str, expected: str, got: Any) -> None:
    if not cond:
        raise ProtocolError(f"{where}: field {name!r}: expected {expected}, got {json.dumps(got)[:120]}")


def parse_capabilities(params: dict[str, Any], where: str) -> Capabilities:
    """The `capabilities` message's params, checked field by field."""
    version = params.get("protocol")
    _expect(version == PROTOCOL_VERSION, where, "protocol", str(PROTOCOL_VERSION), version)
    name = params.get("name")
    _expect(isinstance(name, str) and bool(name), where, "name", "the adapter's name", name)
    modes = params.get("stop_modes")
    _expect(isinstance(modes, dict) and bool(modes), where, "stop_modes", "an object of mode -> {primitive}", modes)
    stop_modes, signals = {}, {}
    for mode, spec in modes.items():
        _expect(isinstance(spec, dict) and isinstance(spec.get("primitive"), str) and spec["primitive"].strip() != "",
                where, f"stop_modes.{mode}", "an object with a one-line primitive", spec)
        stop_modes[mode] = spec["primitive"]
        if spec.get("signal") is not None:
            _expect(spec["signal"] in SIGNALS, where, f"stop_modes.{mode}.signal", f"one of {', '.join(SIGNALS)}",
                    spec["signal"])
            signals[mode] = spec["signal"]
    resume = params.get("resume_primitive", "")
    _expect(isinstance(resume, str), where, "resume_primitive", "a line of text, empty for none", resume)
    styles = params.get("tool_styles")
    _expect(isinstance(styles, list) and bool(styles) and set(styles) <= set(TOOL_STYLES), where, "tool_styles",
            f"a list of some of {', '.join(TOOL_STYLES)}", styles)
    unsupported: dict[tuple[str, str], str] = {}
    raw = params.get("unsupported", {})
    _expect(isinstance(raw, dict), where, "unsupported", "an object of mode -> tool style -> why", raw)
    for mode, by_style in raw.items():
        _expect(isinstance(by_style, dict), where, f"unsupported.{mode}", "an object of tool style -> why", by_style)
        for style, why in by_style.items():
            _expect(mode in stop_modes and style in styles and isinstance(why, str) and why.strip() != "", where,
                    f"unsupported.{mode}.{style}", "a reason, for a declared mode and tool style", why)
            unsupported[(mode, style)] = why
    asks = params.get("asks_stop_button", False)
    _expect(isinstance(asks, bool), where, "asks_stop_button", "true or false", asks)
    handled = params.get("notifies_stop_handled", False)
    _expect(isinstance(handled, bool), where, "notifies_stop_handled", "true or false", handled)
    providers = params.get("providers", [DEFAULT_PROVIDER])
    _expect(isinstance(providers, list) and bool(providers) and set(providers) <= set(PROVIDERS)
            and len(set(providers)) == len(providers), where, "providers",
            f"a list of some of {', '.join(PROVIDERS)}, each once", providers)
    return Capabilities(name, stop_modes, signals, resume, tuple(styles), unsupported, asks, handled,
                        tuple(providers))


def _handled_at(params: dict[str, Any], where: str) -> int:
    """The moment a `stop_handled` notification names: ns of CLOCK_MONOTONIC (Node's process.hrtime), as text or a
    number."""
    t = params.get("t")
    try:
        ns = int(t)
    except (TypeError, ValueError):
        ns = -1
    _expect(ns > 0, where, "t", "the monotonic ns the stop was handled at", t)
    return ns


def handed_over(cls: type[Adapter]) -> dict[str, Any]:
    """What the adapter class declares (its framework.toml's, or its own class attributes), whole, in the shape of
    the capabilities message: what the process is handed as it starts and must say back. A stop mode's signal is
    in its entry (`{"primitive", "signal"}`); `declared_in` names where the declaration is written."""
    out: dict[str, Any] = {"name": cls.name}
    for key in DECLARED:
        value = getattr(cls, key)
        if key == "stop_signals":
            continue  # in stop_modes
        if key == "stop_modes":
            value = {mode: {"primitive": text, **({"signal": cls.stop_signals[mode]} if mode in cls.stop_signals
                                                  else {})} for mode, text in value.items()}
        elif key == "unsupported":
            pairs: dict[str, dict[str, str]] = {}
            for (mode, style), why in value.items():
                pairs.setdefault(mode, {})[style] = why
            value = pairs
        elif key == "modes_since":
            value = {mode: {"package": package, "release": release} for mode, (package, release) in value.items()}
        out[key] = json.loads(json.dumps(value))  # tuples as lists, as the message carries them
    return out


def declared_in(cls: type[Adapter]) -> str:
    """Where the class's declaration is written: its framework folder's framework.toml, else the class."""
    folder = getattr(cls, "folder", None)
    if folder is not None and (Path(folder) / MANIFEST).is_file():
        return str(Path(folder) / MANIFEST)
    return f"{cls.__module__}.{cls.__qualname__}"


def declaration_env(cls: type[Adapter]) -> dict[str, str]:
    """The environment entry that hands the process its declaration (DECLARATION_ENV)."""
    return {DECLARATION_ENV: json.dumps({**handed_over(cls), "declared_in": declared_in(cls)})}


def check_declared(cls: type[Adapter], params: dict[str, Any], where: str) -> None:
    """The process says back the declaration it was handed, every field of it: mode ids, texts and signals, the
    resume, tool styles, unsupported pairs and the rest. The first difference is named, down to the entry."""
    declared = handed_over(cls)
    for key, value in declared.items():
        _same(key, value, params.get(key), where)


def _same(field_name: str, declared: Any, said: Any, where: str) -> None:
    if isinstance(declared, dict) and isinstance(said, dict):
        if list(declared) != list(said):
            raise ProtocolError(f"{where}: field {field_name!r}: the process says {list(said)}; the adapter declares "
                                f"{list(declared)}")
        for key in declared:
            _same(f"{field_name}.{key}", declared[key], said[key], where)
    elif declared != said:
        raise ProtocolError(f"{where}: field {field_name!r}: the process says {json.dumps(said)[:200]}; the adapter "
                            f"declares {json.dumps(declared)[:200]}")


def tool_catalogue() -> list[dict[str, Any]]:
    """The tools as `start` sends them (harness/tools/catalogue.py, the one catalogue): a tool in another language
    is built from this, never from a copy."""
    return [{"name": name, "description": description, "parameters": json_schema(name), "path": path,
             "effect_kind": TOOL_KIND.get(name)} for name, (path, _, description) in TOOL_SPECS.items()]


def _key_policy(toolbox: Any) -> str:
    """How the trial's tools make Idempotency-Keys (harness/tools/mitigation.py), for tools in another language."""
    policy = toolbox.key_policy
    return "idempotent" if isinstance(policy, KeyPolicy) else "per_call" if isinstance(policy, CallKeys) else "none"


class ProtocolAdapter(Adapter):
    """One adapter process per trial, driven through the protocol. Subclasses are made by `protocol_adapter()`."""

    #: the process to start, in `folder`
    command: ClassVar[tuple[str, ...]] = ()
    folder: ClassVar[Path] = Path(".")
    _probed: ClassVar[dict[str, Any] | None] = None

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.conn: Connection | None = None
        self.caps: Capabilities | None = None
        self.baseline: set[str] = set()
        self.stopped: asyncio.Future | None = None  # a signal stop: the process said `stopped`
        self.signalled: str | None = None
        self.handled = False  # the process said when it handled the stop
        self.egress: list[str] = []  # its attempts beyond loopback, from its latest audit
        self.closed_pid: int | None = None

    # --- the lifecycle --------------------------------------------------------------------------

    async def launch(self) -> None:
        """The adapter process, started and ready (its capabilities, its baseline audit) before the run starts: a
        forked Python subject has its framework imported already; this process has loaded its own by then."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future = loop.create_future()
        self.stopped = loop.create_future()

        def note(method: str, params: dict[str, Any]) -> None:
            where = f"{self.name}: {method}"
            if method == "capabilities" and not ready.done():
                caps = parse_capabilities(params, where)  # a ProtocolError breaks the connection: start fails
                check_declared(type(self), params, where)
                ready.set_result(caps)
            elif method == "stopped" and self.signalled is not None and not self.stopped.done():
                self.stopped.set_result(params)
            elif (method == "stop_handled" and self.caps is not None and self.caps.notifies_stop_handled
                  and not self.handled):
                self.handled = True
                self.ctx.stop_handled(_handled_at(params, where))
            else:
                raise ProtocolError(f"{where}: not a notification the adapter may send now (capabilities first, "
                                    "once; stop_handled once, when declared; stopped after a signal stop)")

        conn = self.conn = Connection.spawn(self.name, list(self.command), self.folder,
                                            {**os.environ, **declaration_env(type(self))},
                                            self.ctx.workdir / STDERR_FILE, note)
        await asyncio.wait({ready, conn.failed}, timeout=CAPABILITIES_S, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            raise conn.broken or ProtocolError(f"{self.name}: no capabilities message within {CAPABILITIES_S:g} s "
                                               f"of its start{conn.stderr_tail()}")
        self.caps = ready.result()
        self.baseline = {item["id"] for item in (await self.conn.request("audit", timeout_s=AUDIT_S * 5))["held"]}

    async def start(self) -> None:
        if self.conn is None:  # not launched (a caller of the contract that skips launch)
            await self.launch()
        await self._live().request("start", self._start_params())

    def _start_params(self) -> dict[str, Any]:
        ctx = self.ctx
        asks = self.caps is not None and self.caps.asks_stop_button
        mcp = ctx.mcp.asking(ctx.stop_button) if asks else ctx.mcp
        return {
            "run_id": ctx.run_id, "scenario": ctx.scenario.name, "mode": ctx.mode, "tool_style": ctx.tool_style,
            "model_base_url": ctx.model_base_url, "services_base_url": ctx.services_base_url,
            "model_name": ctx.model_name, "provider": ctx.provider, "system_prompt": ctx.system_prompt,
            "prompt": ctx.prompt,
            "next_input": NEXT_INPUT, "workdir": str(ctx.workdir), "seed": ctx.seed,
            "mcp": {"command": mcp.command, "args": list(mcp.args), "env": dict(mcp.env)},
            "idempotency": _key_policy(ctx.toolbox),
            "saga_log": str(ctx.workdir / "saga.jsonl") if ctx.toolbox.on_attempt is not None else None,
            "tools": tool_catalogue(), "compensations": dict(COMPENSATION_PATH),
            "stop_button": {"path": str(ctx.stop_button.share()), "not_sent": NOT_SENT} if asks else None,
        }

    @property
    def notifies_stop_handled(self) -> bool:
        """Whether this process says when it handled the stop (the world then holds its anchor until then)."""
        return self.caps is not None and self.caps.notifies_stop_handled

    async def stop(self) -> None:
        conn = self._live()
        sig = self.caps.signals.get(self.mode) if self.caps else None
        if sig is None:
            await conn.request("stop", {"mode": self.mode})
            return
        self.signalled = sig
        conn.signal(SIGNALS[sig])
        await asyncio.wait({self.stopped, conn.exited}, return_when=asyncio.FIRST_COMPLETED)

    async def wait(self) -> None:
        result = await self._live().request("wait")
        if result["ended"] == "cancelled":
            raise asyncio.CancelledError(result.get("error") or "cancelled")
        if result["ended"] == "failed":
            raise AdapterFailed(f"{self.name}: the job failed: {result.get('error')}", FAILED)

    async def resume(self) -> None:
        if not self.has_resume():
            raise NoResume(f"{self.name} has no resume")
        conn = self._live()
        if conn.exited.done():
            raise NoResume(f"{self.name}: the adapter process ended at the stop ({self.signalled or 'exit'}): "
                           "nothing of it is left to resume")
        try:
            await conn.request("resume", {"next_input": NEXT_INPUT})
        except AdapterFailed as e:
            if e.code == NO_RESUME:
                raise NoResume(str(e)) from e
            raise

    async def close(self) -> None:
        """`close`, then the end of its stdin: the process exits on its own within EXIT_S, or is killed and
        close() says so."""
        conn = self.conn
        if conn is None:
            return
        if conn.broken is None and not conn.exited.done():
            await self.held()  # its egress to the last
        self.conn, self.closed_pid = None, conn.pid
        # a violation since the stop (a line of junk, an exit) is said here, the last call: the row keeps what the
        # world measured, and close_ok says the conversation broke
        ended_by_signal = self.signalled is not None and conn.exited.done()  # its stop's signal ended it: no fault
        error: BaseException | None = None if ended_by_signal else conn.broken
        if conn.broken is None and not conn.exited.done():
            try:
                await conn.request("close")
            except (AdapterFailed, ProtocolError) as e:
                error = e
        code = await conn.end(EXIT_S)
        if error is not None:
            raise error
        if code is None:  # it was still running: killed
            raise ProtocolError(f"{self.name}: the adapter process did not exit within {EXIT_S:g} s of close and the "
                                "end of its stdin; it was killed")

    async def reported_usage(self) -> int | None:
        """The adapter process's `usage` answer (docs/adapter-protocol.md); None from a process that is gone."""
        conn = self.conn
        if conn is None or conn.exited.done() or conn.broken is not None:
            return None
        return (await conn.request("usage", timeout_s=AUDIT_S)).get("output_tokens")

    async def held(self) -> HostHoldings | None:
        """What the process says it holds, less what it held before the run: its answer to `audit`."""
        conn = self.conn
        if conn is None or conn.exited.done():
            gone = conn.pid if conn is not None else self.closed_pid
            return HostHoldings(gone, [], egress=self.egress, connected=False) if gone and self.egress else None
        if conn.broken is not None:
            return HostHoldings(conn.pid, [], error=str(conn.broken), egress=self.egress)
        try:
            result = await conn.request("audit", timeout_s=AUDIT_S)
        except (ProtocolError, AdapterFailed) as e:
            return HostHoldings(conn.pid, [], error=str(e), egress=self.egress)
        self.egress = list(result.get("egress", []))
        return HostHoldings(conn.pid, [i for i in result["held"] if i["id"] not in self.baseline], egress=self.egress)

    def _live(self) -> Connection:
        if self.conn is None:
            raise ProtocolError(f"{self.name}: the adapter process is not running (start failed or close came first)")
        return self.conn

    # --- the process, asked once before the trials --------------------------------------------------

    @classmethod
    def probe(cls) -> dict[str, Any]:
        """Start the process once, read its capabilities, ask its versions, close it: the class's `versions()`,
        and the check that it agrees with its framework.toml before any trial runs."""
        if cls._probed is not None:
            return cls._probed
        requests = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": {}}) + "\n"
                           for i, m in ((1, "versions"), (2, "close")))
        try:
            out = subprocess.run(list(cls.command), cwd=cls.folder, input=requests.encode(), capture_output=True,
                                 timeout=PROBE_S, env={**os.environ, **cls.environment, **declaration_env(cls)})
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ProtocolError(f"{cls.name}: {' '.join(cls.command)} in {cls.folder}: {e}") from e
        lines = out.stdout.decode(errors="replace").splitlines()
        tail = " | ".join(out.stderr.decode(errors="replace").strip().splitlines()[-5:])
        where = f"{cls.name} (probe, exit {out.returncode}{'; stderr: ' + tail if tail else ''})"
        try:
            messages = [json.loads(line) for line in lines]
        except ValueError:
            raise ProtocolError(f"{where}: stdout is not JSON lines: {lines[:2]}") from None
        if not messages or not isinstance(messages[0], dict) or messages[0].get("method") != "capabilities":
            raise ProtocolError(f"{where}: the first message must be capabilities, got "
                                f"{json.dumps(messages[:1])[:120]}")
        params = messages[0].get("params") or {}
        parse_capabilities(params, f"{cls.name}: capabilities")
        check_declared(cls, params, f"{cls.name}: capabilities")
        answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == 1), None)
        if answer is None or "result" not in answer:
            raise ProtocolError(f"{where}: no result for versions: {json.dumps(answer)[:120]}")
        cls._probed = check_result("versions", answer["result"], f"{cls.name}: answer to versions")
        return cls._probed

    @classmethod
    def versions(cls) -> dict[str, str]:
        return dict(cls.probe()["packages"])


def protocol_adapter(framework: Framework) -> type[ProtocolAdapter]:
    """The adapter class of a framework folder that declares `[protocol]`, with its folder's declarations."""
    if framework.protocol is None or framework.adapter is None:
        raise ValueError(f"{framework.folder}: declares no [protocol] adapter")
    attrs: dict[str, Any] = {**framework.adapter.attributes(), "framework": framework.name,
                             "command": framework.protocol.command, "folder": framework.folder, "_probed": None}
    return type(f"ProtocolAdapter_{framework.folder.name}", (ProtocolAdapter,), attrs)
