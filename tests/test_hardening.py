"""Issue #13: what is left running, and what the world takes. Each test plants the situation for real:
processes with owner markers, a runner that fails mid-run, a world fed thousands of runs or fuzzed bodies."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import owner
from harness.contract.registry import load_adapter
from harness.trial.runner import RunOptions, run_matrix
from tests.processes import not_a_zombie
from tests.test_cli import stopbench
from tests.test_trials import FAST, KA

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _dead_pid() -> int:
    """A pid no process can have (the kernel hands out pids below pid_max): one that just ended is soon another
    process's while the tests beside this one start theirs (pid_max may be 32,768, and the count wraps)."""
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def test_reap_ends_leftovers_of_dead_owners_only(tmp_path):
    dead = _dead_pid()
    orphan = subprocess.Popen(SLEEPER, env={**os.environ, owner.OWNER_ENV: owner.run_marker("r-gone", dead)})
    live = subprocess.Popen(SLEEPER, env={**os.environ, owner.OWNER_ENV: owner.run_marker("r-live", os.getpid())})
    # in a temporary folder of its own: every run's start sweeps the stale folders of the shared one (runner.py),
    # and the tests beside this one start runs
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    folder = own_tmp / f"stopbench-{dead}-known-x-abc"
    folder.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(own_tmp)}
    try:
        time.sleep(0.2)  # both have exec'd: their environment is what /proc shows
        dry = stopbench("reap", "--dry-run", env=env)
        assert dry.returncode == 0
        assert f"would end {orphan.pid} (run, its runner is gone)" in dry.stdout
        assert f"left alone {live.pid} (run of runner {os.getpid()}, which is running)" in dry.stdout
        assert f"would remove {folder} (its runner is gone)" in dry.stdout
        assert orphan.poll() is None and folder.exists()  # a dry run ends nothing
        r = stopbench("reap", env=env)
        assert r.returncode == 0 and f"ending {orphan.pid}" in r.stdout
        assert orphan.wait(5) is not None
        assert live.poll() is None, "reap ended a live run's process"
        assert not folder.exists()
    finally:
        for p in (orphan, live):
            p.kill()
            p.wait()
        folder.rmdir() if folder.exists() else None


def test_reap_sees_a_forked_subject_and_leaves_a_live_run_alone(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--adapter", KA + "HangsInStop",
                             "--scenario", "q3_report", "--offset", "at:50ms", "--out", str(tmp_path)],
                            stderr=subprocess.DEVNULL)
    try:
        subject = None
        deadline = time.monotonic() + 60
        while subject is None and time.monotonic() < deadline:
            subject = next((pid for pid, who, _ in owner.processes()
                            if who.kind == "subject" and who.runner_pid == proc.pid), None)
            time.sleep(0.05)
        assert subject is not None, "the forked subject does not say it is one"
        r = stopbench("reap")
        assert f"left alone {subject} (subject of runner {proc.pid}, which is running)" in r.stdout
        assert psutil.pid_exists(subject)
    finally:
        proc.kill()
        proc.wait()


class _FailingLog(io.StringIO):
    """A log that fails at the first finished trial: an error of ours in the middle of a run."""

    def write(self, text: str) -> int:
        if text.startswith("[1/"):
            raise RuntimeError("the log broke")
        return super().write(text)


def test_an_error_mid_run_leaves_no_trial_running(tmp_path):
    opts = RunOptions(adapter=KA + "LeavesChildAndThread", out=tmp_path, scenarios=["q3_report"],
                      offsets=["at:50ms"], reps=4, jobs=3, deadlines=FAST)
    # this process's own from before (the session's world, when a test before this one in this worker used it)
    before = {pid for pid, who, _ in owner.processes() if who.runner_pid == os.getpid()}
    before |= {c.pid for c in psutil.Process().children(recursive=True)}
    with pytest.raises(RuntimeError, match="the log broke"):
        run_matrix(load_adapter(opts.adapter), opts, log=_FailingLog())
    time.sleep(0.2)
    mine = [(pid, who.kind) for pid, who, _ in owner.processes() if who.runner_pid == os.getpid() and pid not in before]
    assert not mine, f"left running after the error: {mine}"
    running = [c.pid for c in psutil.Process().children(recursive=True) if not_a_zombie(c) and c.pid not in before]
    assert not running, f"children left running after the error: {running}"


def test_a_deleted_run_is_gone_and_the_world_keeps_no_memory_of_it(world, world_client):
    run = world_client.create_run("q3_report")["run_id"]
    world_client.mark(run, "x")
    before = httpx.get(f"{world.url}/health").json()["runs"]
    world_client.delete_run(run)
    assert httpx.get(f"{world.url}/health").json()["runs"] == before - 1
    assert httpx.get(f"{world.url}/runs/{run}/ledger").status_code == 404
    assert httpx.delete(f"{world.url}/runs/{run}").status_code == 404


# --- a bounded fuzz of every endpoint: any input, never a 5xx ---------------------------------------------

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                 max_size=4), max_leaves=12)
_RUN_PATHS = ["ledger", "marks", "quiet", "effects", "processes", "v1/chat/completions", "v1/responses",
              "v1/messages", "v1beta/models/m:generateContent", "v1beta/models/m:streamGenerateContent",
              "email/send", "email/recall", "pr/open", "pr/close", "calendar/book", "calendar/cancel", "chat/post",
              "chat/delete", "docs/draft", "v1/models", "nope"]
_QUERY = st.dictionaries(st.sampled_from(["window_ms", "deadline_ms", "floor_ms", "idempotency_key", "kind"]),
                         st.sampled_from(["0", "1", "-1", "nan", "inf", "1e9", "x", "", "5"]), max_size=3)


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]), path=st.sampled_from(_RUN_PATHS),
       body=_json | st.binary(max_size=200), query=_QUERY, known_run=st.booleans())
def test_no_input_makes_the_world_answer_5xx(world, method, path, body, query, known_run):
    with httpx.Client(base_url=world.url, timeout=10) as client:
        run = client.post("/runs", json={"scenario": "q3_report"}).json()["run_id"] if known_run else "r-nope"
        query = {k: ("1" if k == "deadline_ms" else v) for k, v in query.items()}  # bounded waits only
        # json.dumps writes NaN and Infinity as JSON's extensions do: bodies a strict client would refuse to send
        kw = {"content": body if isinstance(body, bytes) else json.dumps(body).encode(),
              "headers": {"content-type": "application/json"}}
        r = client.request(method, f"/runs/{run}/{path}", params=query, **kw)
        assert r.status_code < 500, (method, path, body, query, r.status_code, r.text[:300])
        top = client.request(method, "/runs", **kw)
        assert top.status_code < 500, (method, body, top.status_code, top.text[:300])
        if known_run:
            client.delete(f"/runs/{run}")


def test_after_sigkill_of_the_cli_nothing_of_its_run_is_alive_2s_later(tmp_path):
    """Subjects die with their runner (PR_SET_PDEATHSIG); their children and the world are ended by the
    world, which notices its owner is gone."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--adapter", KA + "LeavesChildAndThread",
                             "--scenario", "q3_report", "--offset", "at:50ms", "--reps", "4", "--jobs", "2",
                             "--out", str(tmp_path)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        ours: list[int] = []
        while time.monotonic() < deadline and len(ours) < 3:  # the world and at least a subject and its child
            ours = [pid for pid, who, _ in owner.processes() if who.runner_pid == proc.pid]
            time.sleep(0.05)
        assert len(ours) >= 3, f"the run never got going: {ours}"
    finally:
        proc.kill()
        proc.wait()
    time.sleep(2)
    alive = [pid for pid in ours if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    for pid in alive:
        psutil.Process(pid).kill()
    assert not alive, f"alive 2 s after the runner was killed: {alive}"


@pytest.mark.slow
def test_ctrl_c_with_mcp_servers_running_leaves_none_and_no_traceback(tmp_path):
    """The running trials are ended while the world still answers: their ledgers are read, their MCP
    servers found and ended, and nothing of it is alive once the command has returned."""
    import signal

    out = tmp_path / "raw" / "reference.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--adapter", "reference", "--tools", "mcp",
                             "--scenario", "q3_report", "--offset", "on:effect_received:email", "--reps", "6",
                             "--jobs", "3", "--out", str(tmp_path)], stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()):
            time.sleep(0.05)
        assert out.exists(), "no row appeared"
        servers = [pid for pid, who, cmd in owner.processes() if who.runner_pid == proc.pid and "mcp_server" in cmd]
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(30) == 130
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    left = [pid for pid, who, _ in owner.processes() if who.runner_pid == proc.pid]
    assert not left, f"still running after Ctrl-C: {left} (MCP servers then: {servers})"
    assert "Traceback" not in err and "interrupted" in err, err[-2000:]
