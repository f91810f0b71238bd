"""Start a world process and talk to it (runs, marks, ledger, quiet) from the harness side."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from harness import python_module
from harness.owner import OWNER_ENV, world_marker
from harness.scenario import DEFAULT_SCENARIOS_DIR, Offset


class WorldError(RuntimeError):
    pass


class WorldProcess:
    """A world server in a child process; a context manager that always ends it."""

    def __init__(self, scenarios_dir: Path = DEFAULT_SCENARIOS_DIR, port: int = 0):
        self.scenarios_dir = scenarios_dir
        self.port = port
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout_s: float = 20.0) -> str:
        env = {**os.environ, OWNER_ENV: world_marker(os.getpid())}
        # stderr to a file, not a pipe: nobody reads it during a run, and a full pipe would stall the world
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [*python_module("world"), "--port", str(self.port),
             "--scenarios", str(self.scenarios_dir)],
            stdout=subprocess.PIPE, stderr=self.stderr, env=env, text=True,
            start_new_session=True,  # a terminal's Ctrl-C goes to the runner, which then ends the world in order
        )
        line = self.proc.stdout.readline().strip() if self.proc.stdout else ""
        if not line.startswith("http://"):
            self.proc.wait(5)
            self.stderr.seek(0)
            err = self.stderr.read()[-2000:]
            self.stop()
            raise WorldError(f"the world did not start: {line} {err}".strip())
        self.url = line
        # stdout carries only that first line; stderr (uvicorn's warnings) goes to the file above.
        # No reader threads here: subjects are forked from this process and must not inherit any.
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/health", timeout=1, verify=False).raise_for_status()
                return self.url
            except httpx.HTTPError:
                time.sleep(0.02)
        self.stop()
        raise WorldError(f"the world at {self.url} did not answer /health in {timeout_s}s")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.stderr.close()
        self.proc = None

    def __enter__(self) -> WorldProcess:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class WorldClient:
    """Synchronous calls the harness makes to the world (never on a framework's hot path)."""

    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=timeout_s, verify=False)

    def close(self) -> None:
        self.http.close()

    def _check(self, r: httpx.Response) -> Any:
        if r.status_code >= 400:
            raise WorldError(f"{r.request.method} {r.request.url.path}: HTTP {r.status_code} {r.text[:300]}")
        return r.json()

    def create_run(self, scenario: str | dict, seed: int = 0, stop_anchor: Offset | None = None,
                   billing: str | None = None) -> dict:
        """A run of `scenario`; the world fires `stop_anchor` (an event offset), sent as its data, and plays
        `billing` (harness/billing.py) in place of the scenario's profile when given."""
        body = {"scenario": scenario, "seed": seed, "stop_anchor": stop_anchor.to_data() if stop_anchor else None,
                "billing": billing}
        return self._check(self.http.post(f"{self.url}/runs", json=body))

    def ledger(self, run_id: str) -> dict[str, Any]:
        return self._check(self.http.get(f"{self.url}/runs/{run_id}/ledger"))

    def delete_run(self, run_id: str) -> None:
        """Free the world's memory of a run whose row is computed (or that will rerun)."""
        self._check(self.http.delete(f"{self.url}/runs/{run_id}"))

    def mark(self, run_id: str, name: str, t: int | None = None, data: Any = None) -> int:
        body = {"name": name, "t": t if t is not None else time.monotonic_ns(), "data": data}
        return self._check(self.http.post(f"{self.url}/runs/{run_id}/marks", json=body))["t"]

    def quiet(self, run_id: str, window_ms: float, deadline_ms: float) -> dict[str, Any]:
        r = self.http.get(f"{self.url}/runs/{run_id}/quiet",
                          params={"window_ms": window_ms, "deadline_ms": deadline_ms},
                          timeout=deadline_ms / 1000 + 10)
        return self._check(r)
