"""The shared contract tests (harness/testing/) catch the adapters they are there to catch: each deliberately
broken adapter below fails the one test that checks what it breaks, with that test's message."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

from harness.contract.adapter import Adapter, NoResume
from tests.known_answer.adapters import model_loop

ROOT = Path(__file__).resolve().parent.parent


class _Loop(Adapter):
    """A correct agent on the model API; stop cancels its task, resume runs the job again."""

    stop_modes = {"cancel": "cancel the job task"}
    tool_styles = ("async",)
    resume_primitive = "run the job again"

    async def start(self) -> None:
        self.task = asyncio.create_task(model_loop(self.ctx, self.call))

    async def call(self, name: str, args: dict) -> str:
        result = self.ctx.tools[name](**args)
        return await result if inspect.isawaitable(result) else result

    async def stop_cancel(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    async def wait(self) -> None:
        await self.task

    async def resume(self) -> None:
        await model_loop(self.ctx, self.call)

    async def close(self) -> None:
        pass


class SkipsWithoutAReason(_Loop):
    """Declares cancel with sync tools unsupported, with an empty reason: the harness then runs the pair."""

    name = "contract-skips-without-a-reason"
    tool_styles = ("async", "sync")
    unsupported = {("cancel", "sync"): ""}


class PrimitiveFromTheFuture(_Loop):
    """Correct: its only mode's primitive comes in a release of httpx not installed here, so its trial is skipped
    as unsupported in this release (modes_since), not failed."""

    name = "contract-primitive-from-the-future"
    modes_since = {"cancel": ("httpx", "999.0")}


class ResumesAfterOneModeOnly(_Loop):
    """Declares a resume, and has one only after `cancel`: after `abandon` resume() says there is none."""

    name = "contract-resumes-after-one-mode-only"
    stop_modes = {"cancel": "cancel the job task", "abandon": "stop waiting for the job task"}

    async def stop_abandon(self) -> None:
        pass

    async def resume(self) -> None:
        if self.mode == "abandon":
            raise NoResume("not wired for abandon")
        await super().resume()


def contract(adapter: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """The contract tests against `tests.test_contract_suite:<adapter>`, with the harness of `root`."""
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "harness.testing.plugin", "--pyargs",
                           "harness.testing", "--adapter", f"tests.test_contract_suite:{adapter}",
                           "-p", "no:cacheprovider"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _outcomes(out: str) -> dict[str, str]:
    """test id -> PASSED / FAILED, from pytest's -rA summary."""
    found = {}
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR"):
            found[rest.split(" - ")[0].split("::")[-1]] = word
    return found


def test_an_unsupported_pair_that_runs_is_caught():
    r = contract("SkipsWithoutAReason")
    name = "tests.test_contract_suite:SkipsWithoutAReason"
    assert _outcomes(r.stdout) == {
        f"test_declares_itself[{name}]": "FAILED",
        f"test_stops_and_closes_in_every_mode[{name}-cancel-async]": "PASSED",
        f"test_stops_and_closes_in_every_mode[{name}-cancel-sync]": "FAILED",
        f"test_resume_works_or_is_declared_absent[{name}]": "PASSED",
        f"test_leaves_nothing_running[{name}]": "PASSED"}, r.stdout[-3000:]
    assert "unsupported ('cancel', 'sync') needs its reason: the trial is skipped with it" in r.stdout
    assert "cancel/sync: declared unsupported, but its trial ran (ok): it must be a skipped row" in r.stdout


def test_a_mode_skipped_in_an_older_release_passes():
    r = contract("PrimitiveFromTheFuture")
    assert r.returncode == 0 and "4 passed" in r.stdout, r.stdout[-3000:]


def test_a_resume_missing_after_one_mode_is_caught():
    r = contract("ResumesAfterOneModeOnly")
    name = "tests.test_contract_suite:ResumesAfterOneModeOnly"
    assert _outcomes(r.stdout)[f"test_resume_works_or_is_declared_absent[{name}]"] == "FAILED", r.stdout[-3000:]
    assert "resume is declared, but after these stops it did not run: abandon/async: no resume" in r.stdout
    assert r.stdout.count("FAILED") == 1, r.stdout[-3000:]
