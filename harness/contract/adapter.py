"""The Adapter contract every framework adapter implements.

An adapter presses the framework's own buttons, the way its documentation tells users to, and
nothing more. It never reads the ledger and never special-cases a scenario or an offset: what the
framework does after the stop is what stopbench measures, so an adapter states no expected outcome.

What an adapter declares about itself (`name`, `stop_modes`, `resume_primitive`, `tool_styles`, `unsupported`,
`modes_since`, `environment`, `packages`, `providers`, `stop_signals`) is data: a class defined in a framework
folder gets it from the folder's framework.toml (harness/frameworks.py: the top level for the framework's adapter, a
[[variants]] entry for a variant), so the report and the checks read it without importing a framework; a class
anywhere else (an entry point, a test) declares it as class attributes. The adapter kit (harness/contract/kit.py,
`KitAdapter`) owns the plumbing: the job, the stop flag, wait(), the task_cancel button, close() and the model client.

Lifecycle, driven by the trial inside one subject process; the adapter is made with the trial's
context (`self.ctx`, and `self.mode`, the stop button this trial will press):
    start()      begin the job (return once it is running; do not wait for it to finish)
    stop()       press the stop button: the harness calls `stop_<mode>()` (one method per button)
                 and returns when the framework says it has stopped
    wait()       until the job's own task/thread ends (completed, cancelled or failed)
    resume()     continue the stopped job from the framework's saved state (NoResume if none)
    close()      release what the adapter opened (clients, MCP servers)
"""

from __future__ import annotations

import abc
import functools
import importlib.metadata
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from harness import ADAPTERS
from harness.contract.sources import package_sources
from harness.frameworks import MANIFEST, TOOL_STYLES, Declaration, Framework, adapter_name, load, release_key
from harness.providers import DEFAULT_PROVIDER
from harness.scenario import Scenario
from harness.stop_button import STOP_BUTTON_ENV, StopButton
from harness.tools.toolbox import Toolbox

SYSTEM_PROMPT = "You are an assistant that gets the user's job done with the tools you have."


class NoResume(Exception):
    """Raised by resume() of an adapter whose framework offers no way to continue a stopped run."""


@dataclass(frozen=True)
class McpServer:
    """How to start the world's MCP stdio server: hand these to the framework's own MCP client.

    `env` carries the run's owner marker, so the server (and anything it starts) stays findable.
    """

    command: str
    args: tuple[str, ...]
    env: dict[str, str]

    def params(self) -> dict[str, Any]:
        """The usual stdio parameters: {"command", "args", "env"} (mcp's StdioServerParameters takes them)."""
        return {"command": self.command, "args": list(self.args), "env": dict(self.env)}

    def asking(self, button: StopButton) -> McpServer:
        """The same server, whose tool calls ask `button` before they leave (harness.stop_button): a call
        not yet sent when stop is pressed is answered NOT_SENT instead. Only the reference asks; a
        framework adapter never does (its framework's MCP calls go out whenever it sends them)."""
        return replace(self, env={**self.env, STOP_BUTTON_ENV: str(button.share())})


@dataclass(frozen=True)
class TrialContext:
    """What an adapter gets for one trial. Wrap the tools; never rewrite them."""

    run_id: str
    scenario: Scenario
    #: the world's API of this trial's `provider`, as that provider's official SDK takes it as its base URL (openai:
    #: `.../v1`; anthropic and gemini: the run's URL, the SDK adds its API's path): harness/providers.py
    model_base_url: str
    services_base_url: str
    model_name: str  # the provider's model name for the trial (harness/providers.py)
    mode: str  # the stop button this trial presses: some primitives are chosen when the run starts
    tool_style: str  # sync | async | mcp
    toolbox: Toolbox  # the one implementation of the tools (also compensations)
    mcp: McpServer
    workdir: Path
    seed: int = 0
    #: the model provider this trial talks to: one of the adapter's declared `providers` (harness/providers.py)
    provider: str = DEFAULT_PROVIDER
    #: pressed by the harness at `stop_called`, released when resume starts; an agent that checks it
    #: before a send (`Toolbox.call(..., unless_pressed=...)`) never sends after the stop (the reference)
    stop_button: StopButton = field(default_factory=StopButton)
    #: an adapter in another process calls this with the moment (monotonic ns) its process handled the stop
    stop_handled: Callable[[int], None] = field(default=lambda t: None)

    @property
    def tools(self) -> dict[str, Any]:
        """The tool functions of this trial's style, by name: plain functions for `sync`, coroutine
        functions for `async`; empty for `mcp` (the framework's MCP client lists the server's tools)."""
        if self.tool_style == "sync":
            return dict(self.toolbox.sync)
        if self.tool_style == "async":
            return dict(self.toolbox.async_)
        return {}

    @property
    def prompt(self) -> str:
        return self.scenario.prompt

    @property
    def system_prompt(self) -> str:
        return SYSTEM_PROMPT


@dataclass(frozen=True)
class HostHoldings:
    """What an adapter process of another language says it holds (docs/adapter-protocol.md, `audit`): its pid and
    the items it holds that it did not hold before the run. The audit counts them by the one rule of idle and
    scheduled work (harness/trial/activity.py); `error` says why it could not be asked."""

    pid: int
    held: list[dict[str, str]]
    error: str | None = None
    #: its attempts to reach anything but loopback since it started ("resolve HOST", "connect ADDRESS:PORT")
    egress: list[str] = field(default_factory=list)
    #: False once the process was closed: only its egress is still told
    connected: bool = True
    #: a served trial's server (harness/trial/serve/hosted.py `audit`): what it holds in the audit's own terms
    #: (`left`: threads, tasks, sockets, egress) and its scheduled work (`work`), where `held` is empty
    served: dict[str, Any] | None = None


def stop_method_name(mode: str) -> str:
    """`stop_<mode>`, with anything not allowed in a Python name as `_` (`cancel+state` -> `stop_cancel_state`)."""
    return "stop_" + re.sub(r"\W", "_", mode)


class Adapter(abc.ABC):
    #: the adapter's name in rows and on the command line (in a framework folder: the folder's, - for _)
    name: ClassVar[str]
    #: the framework this adapter measures (claims and the report group by it); default: `name`
    framework: ClassVar[str] = ""
    #: stop mode id -> the framework primitive it uses, in one line; each has a `stop_<mode>` method
    stop_modes: ClassVar[dict[str, str]]
    #: how resume works, one line; empty when the framework offers none (resume() raises NoResume)
    resume_primitive: ClassVar[str] = ""
    tool_styles: ClassVar[tuple[str, ...]] = TOOL_STYLES
    #: (stop mode, tool style) -> why the framework cannot run that pair at all; its trials are `skipped`
    unsupported: ClassVar[dict[tuple[str, str], str]] = {}
    #: stop mode -> (distribution, the first release that has its primitive): in an older release (the version
    #: history installs old ones) its trials are `skipped` as unsupported there, not failed
    modes_since: ClassVar[dict[str, tuple[str, str]]] = {}
    #: environment set before the framework is imported (telemetry off, no phoning home)
    environment: ClassVar[dict[str, str]] = {}
    #: distributions whose versions every row records
    packages: ClassVar[tuple[str, ...]] = ()
    #: the model providers the adapter has clients for (harness/providers.py), its home one first: a trial of
    #: another is refused before it runs
    providers: ClassVar[tuple[str, ...]] = (DEFAULT_PROVIDER,)
    #: stop mode -> the signal that presses it (an adapter process's: harness/contract/protocol.py)
    stop_signals: ClassVar[dict[str, str]] = {}
    #: runs scenarios that script calls to the user's own tools (`tools:` in the scenario): an agent under test
    #: that brings its own tools does; a framework adapter, given the harness's tools, does not
    runs_declared_tools: ClassVar[bool] = False
    #: the agent's own built-in tools (a coding CLI's shell) a scenario's `agent_tools` may script calls to
    agent_tools: ClassVar[tuple[str, ...]] = ()
    #: the trial counts the run's processes at fixed moments after the stop (harness/trial/census.py) and observes
    #: at least until the last: an orchestrator CLI, whose leftovers outlive the process the user started
    census: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class defined in a framework folder takes its declarations from the folder's framework.toml; the class
        may not state them again (one place per fact)."""
        super().__init_subclass__(**kwargs)
        found = declared(cls)
        if found is None:
            return
        framework, declaration = found
        for attr, value in declaration.attributes().items():
            if attr in cls.__dict__:
                raise TypeError(f"{cls.__module__}.{cls.__qualname__}.{attr}: declared in "
                                f"{framework.folder / MANIFEST}; state it there only")
            setattr(cls, attr, value)

    def __init__(self, ctx: TrialContext):
        self.ctx = ctx
        self.mode = ctx.mode

    @classmethod
    def prepare(cls) -> None:
        """Import the framework (in the parent, so forked subjects start warm)."""

    async def launch(self) -> None:
        """Get ready before the run starts, as a running app is (called before the run's clock starts, so a time
        offset counts from the run's start, not from a process's start): an adapter process is started here."""

    @abc.abstractmethod
    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Press this trial's stop button: `stop_<mode>()`."""
        await getattr(self, stop_method_name(self.mode))()

    @abc.abstractmethod
    async def wait(self) -> None: ...

    async def resume(self) -> None:
        raise NoResume(f"{self.name} has no resume")

    async def reported_usage(self) -> int | None:
        """The output tokens the framework's own usage accounting says the stopped run used (its turns up to the
        stop, the cancelled one included if it counts it), read once the stop phase settled; None when it reports
        none. Rows set it beside what the world billed: what a user's bill would show against what the
        framework's usage told them."""
        return None

    def exit_status(self) -> int | None:
        """How the job's process ended, where the job is a process the user started (an orchestrator CLI): its exit
        code, or minus the signal that killed it; None for a job inside the subject or an adapter process."""
        return None

    def apparatus(self) -> set[int]:
        """Processes the adapter started for the harness, not for the run (a CLI's network relay): the audits and the
        census leave them out."""
        return set()

    async def held(self) -> HostHoldings | None:
        """What an adapter process in another language holds, for the audit; None for an adapter in the subject
        itself (the audit sees its threads and tasks directly)."""
        return None

    @abc.abstractmethod
    async def close(self) -> None: ...

    @classmethod
    def framework_name(cls) -> str:
        """`framework`, else the folder of a built-in adapter (`adapters.<folder>.`), else `name`."""
        if cls.framework:
            return cls.framework
        prefix = ADAPTERS + "."
        folder = cls.__module__[len(prefix):].split(".")[0] if cls.__module__.startswith(prefix) else ""
        return adapter_name(folder) if folder and cls.__module__.count(".") > prefix.count(".") else cls.name

    @classmethod
    def versions(cls) -> dict[str, str]:
        return package_versions(cls.packages)

    @classmethod
    def sources(cls) -> dict[str, dict[str, Any]]:
        """Where the packages came from when not from an index (a checkout, a git ref, a wheel file): PEP 610."""
        return package_sources(cls.packages)

    @classmethod
    def has_resume(cls) -> bool:
        return bool(cls.resume_primitive)

    @property
    def notifies_stop_handled(self) -> bool:
        """Whether the adapter says when its own process handled the stop (ctx.stop_handled): an adapter in
        another process does, so the stop counts from there and its delivery is measured apart."""
        return False

    @classmethod
    def why_unsupported(cls, mode: str, tool_style: str) -> str | None:
        """Why this mode cannot run with this tool style here (`unsupported`, or a release older than the
        mode's primitive: `modes_since`), or None."""
        why = cls.unsupported.get((mode, tool_style))
        if why or mode not in cls.modes_since:
            return why
        package, first = cls.modes_since[mode]
        have = package_versions((package,))[package]
        if have != "not installed" and release_key(have) < release_key(first):
            return f"unsupported in {package} {have}: its primitive came in {first}"
        return None


def declared(cls: type) -> tuple[Framework, Declaration] | None:
    """The framework folder of the module that defines `cls` (a framework.toml beside it) and what it declares for
    that class (its [[variants]] entry, else the framework's adapter); None outside a framework folder."""
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    if file is None or not (Path(file).resolve().parent / MANIFEST).exists():
        return None
    framework = _framework(Path(file).resolve().parent)
    declaration = framework.declaration(cls.__module__, cls.__qualname__)
    return (framework, declaration) if declaration is not None else None


@functools.cache
def _framework(folder: Path) -> Framework:
    return load(folder)


def package_versions(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out
