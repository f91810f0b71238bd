"""The orchestrator adapter kind: a coding agent's CLI, launched as its users script it and stopped as they stop it.

The CLI (Codex CLI, Claude Code, a planted one in the tests) runs headless as a child of the subject, in a process
group of its own as a shell's job is, with the subject's throwaway HOME (harness/trial/subject.py) and a private
temp folder, its model endpoint and MCP servers pointed at the world. Everything it starts (a native binary behind
an npm wrapper, MCP servers, shell children that set up sessions of their own) is a descendant of the subject, a
child subreaper, so the audits, the census (harness/trial/census.py) and the reaper find it whatever it did.

Its stop buttons are signals, pressed as a user presses them (`STOPS`); stop() returns when the process the user
started has exited, as a shell prompt comes back. A subclass says how its CLI is started (`command()`,
`run_environment()`, `configure()` for its config files) and which process is its native binary (`native`); it
presses nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import psutil

from harness.contract.adapter import Adapter, HostHoldings, NoResume
from harness.tools.netns import IsolatedNetwork

#: where the CLI's output goes, in the trial folder: its stdout (the JSON lines of a headless run) and stderr, per
#: run of the CLI (`start`, `resume`)
OUTPUT_FILES = "cli-{run}-stdout.log", "cli-{run}-stderr.log"


@dataclass(frozen=True)
class SignalStop:
    """A stop a user presses with a signal: to the process they started (`cli`), to its process group (`group`:
    what a terminal sends to its foreground job), or to the native binary behind an npm wrapper (`native`: a crash
    of the binary, or a user's `kill` of the process that uses the CPU)."""

    signal: signal.Signals
    target: str


#: stop mode id -> the signal and whom it reaches. The one table of an orchestrator's buttons: a framework.toml
#: declares some of these ids, each with its line of text
STOPS: dict[str, SignalStop] = {
    "sigint": SignalStop(signal.SIGINT, "cli"),  # Ctrl-C as `kill -INT <pid>` from a script
    "sigint_group": SignalStop(signal.SIGINT, "group"),  # Ctrl-C at a terminal: the whole foreground job
    "sighup": SignalStop(signal.SIGHUP, "group"),  # the terminal closed: the shell hangs up its jobs
    "sigkill": SignalStop(signal.SIGKILL, "cli"),  # a crash or `kill -9` of the process the user started
    "sigkill_native": SignalStop(signal.SIGKILL, "native"),  # the native binary dies (OOM killer, kill -9)
}


class CliExited(Exception):
    """The CLI ended with a non-zero exit status (after a stop: how it says it was interrupted)."""

    def __init__(self, code: int):
        super().__init__(f"exit status {code}" if code >= 0 else f"killed by {signal.Signals(-code).name}")
        self.code = code


class NoNative(LookupError):
    """A `native` stop found no native binary in the CLI's process tree."""


class OrchestratorAdapter(Adapter):
    """One CLI run per trial: started by start(), stopped by a signal (STOPS), its exit awaited by wait()."""

    census: ClassVar[bool] = True
    tool_styles: ClassVar[tuple[str, ...]] = ("mcp",)
    #: the native binary's command line ends with this (its path's tail); the CLI itself, where it execs into it
    native: ClassVar[str] = ""
    #: run the CLI in a network namespace of its own (harness/tools/netns.py): only the world reachable, every name
    #: it looks up counted in `egress_attempts` (a native binary's sockets are out of reach of the subject's hook)
    isolated: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A CLI's stop modes are some of STOPS (checked when the class is made, its framework.toml read)."""
        super().__init_subclass__(**kwargs)
        unknown = set(getattr(cls, "stop_modes", {})) - set(STOPS)
        if unknown:
            raise TypeError(f"{cls.__qualname__}: stop modes {sorted(unknown)} are none of an orchestrator's: "
                            f"{sorted(STOPS)}")

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self.proc: subprocess.Popen | None = None
        self.exited: asyncio.Future | None = None
        self.network: IsolatedNetwork | None = None

    # --- what a CLI's adapter says ----------------------------------------------------------------

    def command(self) -> list[str]:
        """The command line a user's script runs."""
        raise NotImplementedError

    def run_environment(self, home: Path) -> dict[str, str]:
        """Variables of this run for the CLI (a config folder under `home`). The switches that keep it from phoning
        home are the framework's declared `environment` (framework.toml), set in the subject and inherited."""
        return {}

    def resume_command(self) -> list[str]:
        """The command line a user runs to go on with the stopped session (framework.toml's `resume_primitive`)."""
        raise NoResume(f"{self.name} has no resume")

    def configure(self, home: Path) -> None:
        """Write the CLI's config files under its throwaway HOME (the model provider, the MCP servers)."""

    @property
    def project(self) -> Path:
        """The folder the CLI works in (a user's checkout)."""
        return self.ctx.workdir / "project"

    # --- the lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        home = Path(os.environ["HOME"])
        for folder in (home, self.project):
            folder.mkdir(parents=True, exist_ok=True)
        self.configure(home)
        if self.isolated:
            self.network = IsolatedNetwork(urlsplit(self.ctx.model_base_url).port or 80, self.ctx.workdir)
        self.proc = self._launch(self.command(), "start")
        self.exited = _exit_of(self.proc)

    async def resume(self) -> None:
        """Run the CLI's resume command (after the stopped one has exited) until it exits."""
        if not self.has_resume():
            raise NoResume(f"{self.name} has no resume")
        code = await _exit_of(self._launch(self.resume_command(), "resume"))
        if code != 0:
            raise CliExited(code)

    def _launch(self, argv: list[str], run: str) -> subprocess.Popen:
        """The CLI as a shell starts a job: a process group of its own, in the project, with a private temp folder."""
        home, tmp = Path(os.environ["HOME"]), self.ctx.workdir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "TMPDIR": str(tmp), **self.run_environment(home)}
        out_name, err_name = (name.format(run=run) for name in OUTPUT_FILES)
        if self.network is not None:
            argv = self.network.join(argv)
        with open(self.ctx.workdir / out_name, "wb") as out, open(self.ctx.workdir / err_name, "wb") as err:
            return subprocess.Popen(argv, cwd=self.project, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, process_group=0)

    async def stop(self) -> None:
        """Send the mode's signal (STOPS) and return once the process the user started has exited."""
        press = STOPS[self.mode]
        proc = self._running()
        with contextlib.suppress(ProcessLookupError):
            if press.target == "group":
                os.killpg(proc.pid, press.signal)
            elif press.target == "native":
                os.kill(self.native_pid(), press.signal)
            else:
                os.kill(proc.pid, press.signal)
        await asyncio.shield(self.exited)

    def native_pid(self) -> int:
        """The native binary: the first process of the CLI's tree (the CLI first) that `is_native`."""
        proc = self._running()
        try:
            tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        for p in tree:
            with contextlib.suppress(psutil.Error):
                if self.is_native(p.cmdline()):
                    return p.pid
        raise NoNative(f"{self.name}: no process of the CLI's tree is its native binary ({self.native!r})")

    def is_native(self, argv: list[str]) -> bool:
        """This command line is the native binary's: its program (or an interpreter's script) ends with `native`."""
        return bool(self.native) and any(a.endswith(self.native) for a in argv[:2])

    async def wait(self) -> None:
        code = await asyncio.shield(self._started_exit())
        if code != 0:
            raise CliExited(code)

    def exit_status(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def apparatus(self) -> set[int]:
        return {self.network.process.pid} if self.network is not None else set()

    async def held(self) -> HostHoldings | None:
        """What the CLI looked up in its network namespace: egress only (what it runs is walked from the subject)."""
        if self.network is None:
            return None
        return HostHoldings(self.network.process.pid, [], egress=self.network.egress(), connected=False)

    async def close(self) -> None:
        """The network relay ends; what the stop left running is the harness's to find and count."""
        if self.network is not None:
            self.network.close()

    def _started_exit(self) -> asyncio.Future:
        if self.exited is None:
            raise RuntimeError(f"{self.name}: the CLI was never started")
        return self.exited

    def _running(self) -> subprocess.Popen:
        if self.proc is None:
            raise RuntimeError(f"{self.name}: the CLI was never started")
        return self.proc


def _exit_of(proc: subprocess.Popen) -> asyncio.Future:
    """A future of the process's exit status, settled by the loop when its pidfd becomes readable: no thread (an
    asyncio child watcher's would count in the audits) and no polling timer (it would hold the trial open)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    fd = os.pidfd_open(proc.pid)

    def reap() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        if not done.done():
            done.set_result(proc.wait())

    loop.add_reader(fd, reap)
    return done
