"""The Adapter contract every framework adapter implements, and the registry that finds adapters.

An adapter presses the framework's own buttons, the way its documentation tells users to, and
nothing more. It never reads the ledger and never special-cases a scenario or an offset: what the
framework does after the stop is what stopbench measures, so an adapter states no expected outcome.

Lifecycle, driven by harness/trial.py inside one subject process:
    start(ctx)   begin the job (return once it is running; do not wait for it to finish)
    stop(mode)   press the stop button `mode`; return when the framework says it has stopped
    wait()       until the job's own task/thread ends (completed, cancelled or failed)
    resume()     continue the stopped job from the framework's saved state (NoResume if none)
    close()      release what the adapter opened (clients, MCP servers)
"""

from __future__ import annotations

import abc
import asyncio
import importlib
import importlib.metadata
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.scenario import Scenario
from harness.tools.toolbox import Toolbox

ADAPTERS_DIR = Path(__file__).resolve().parent.parent / "adapters"
ENTRY_POINT_GROUP = "stopbench.adapters"
TOOL_STYLES = ("sync", "async", "mcp")


class NoResume(Exception):
    """Raised by resume() of an adapter whose framework offers no way to continue a stopped run."""


class AdapterError(LookupError):
    """An adapter name, import path or mode that does not resolve; the message says what exists."""


@dataclass
class TrialContext:
    """What an adapter gets for one trial. Wrap `tools`; never rewrite them."""

    run_id: str
    scenario: Scenario
    model_base_url: str
    services_base_url: str
    model_name: str
    tool_style: str  # sync | async | mcp
    tools: Toolbox
    mcp_command: list[str]
    workdir: Path
    seed: int = 0
    env: dict[str, str] = field(default_factory=dict)
    #: the stop mode this trial will press: some primitives are chosen when the run starts
    #: (a breakpoint compiled in, a control object passed, a sync loop in a thread)
    mode: str = ""

    @property
    def prompt(self) -> str:
        return self.scenario.prompt

    @property
    def system_prompt(self) -> str:
        return "You are an assistant that gets the user's job done with the tools you have."


class Adapter(abc.ABC):
    name: ClassVar[str]
    #: stop mode id -> the framework primitive it uses, in one line
    stop_modes: ClassVar[dict[str, str]]
    #: how resume works, one line; empty when the framework offers none (resume() raises NoResume)
    resume_primitive: ClassVar[str] = ""
    tool_styles: ClassVar[tuple[str, ...]] = TOOL_STYLES
    #: (stop mode, tool style) -> why the framework cannot run that pair at all; its trials are `skipped`
    unsupported: ClassVar[dict[tuple[str, str], str]] = {}
    #: environment set before the framework is imported (telemetry off, no phoning home)
    environment: ClassVar[dict[str, str]] = {}
    #: distributions whose versions every row records
    packages: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def prepare(cls) -> None:
        """Import the framework (in the parent, so forked subjects start warm)."""

    @abc.abstractmethod
    async def start(self, ctx: TrialContext) -> None: ...

    @abc.abstractmethod
    async def stop(self, mode: str) -> None: ...

    @abc.abstractmethod
    async def wait(self) -> None: ...

    async def resume(self) -> None:
        raise NoResume(f"{self.name} has no resume")

    @abc.abstractmethod
    async def close(self) -> None: ...

    @classmethod
    def versions(cls) -> dict[str, str]:
        return package_versions(cls.packages)

    @classmethod
    def has_resume(cls) -> bool:
        return bool(cls.resume_primitive)


def in_own_thread(fn: Any, *args: Any, name: str = "stopbench-caller") -> asyncio.Future:
    """Run blocking user code on a thread of its own (as a web server's request thread would), ending
    with the call; the future settles on the calling loop. A shared helper so adapters need not copy it."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if not fut.done():
            fut.set_exception(error) if error is not None else fut.set_result(result)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as e:  # handed to the awaiting task
            loop.call_soon_threadsafe(settle, None, e)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


def package_versions(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _folder(name: str) -> str:
    return name.replace("-", "_")


def builtin_adapter_names() -> list[str]:
    if not ADAPTERS_DIR.is_dir():
        return []
    return sorted(p.name.replace("_", "-") for p in ADAPTERS_DIR.iterdir()
                  if (p / "adapter.py").exists() and not p.name.startswith("_"))


def entry_point_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def available_adapters() -> list[str]:
    return sorted(set(builtin_adapter_names()) | set(entry_point_names()))


def load_adapter(name: str) -> type[Adapter]:
    """Resolve an adapter by built-in name, entry point name, or `package.module:Class`."""
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise AdapterError(f"adapter {name!r}: cannot import {module_name}: {e}") from e
        cls = getattr(module, attr, None)
        if cls is None:
            raise AdapterError(f"adapter {name!r}: {module_name} has no {attr}")
        return _checked(cls, name)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _checked(ep.load(), name)
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name) or name not in builtin_adapter_names():
        known = ", ".join(available_adapters()) or "none"
        raise AdapterError(f"unknown adapter {name!r} (known: {known}; or give package.module:Class)")
    module_name = f"adapters.{_folder(name)}.adapter"
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise AdapterError(
            f"adapter {name!r} is not installed in this environment ({e}); run it in its own nox "
            f"session: nox -s \"bench(adapter='{name}')\""
        ) from e
    cls = getattr(module, "ADAPTER", None)
    if cls is None:
        raise AdapterError(f"{module_name} must define ADAPTER = <its Adapter subclass>")
    return _checked(cls, name)


def _checked(cls: Any, origin: str) -> type[Adapter]:
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        raise AdapterError(f"adapter {origin!r}: {cls!r} is not a harness.adapter.Adapter subclass")
    if not getattr(cls, "stop_modes", None):
        raise AdapterError(f"adapter {origin!r}: declares no stop_modes")
    return cls
