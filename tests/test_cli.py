"""The commands as a user runs them: in a subprocess, with real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from harness.results.rows import raw_file
from harness.trial.world_client import OWNER_ENV
from tests.processes import cmdline, not_a_zombie
from tests.test_trials import KA, assert_nothing_left

ROOT = Path(__file__).resolve().parent.parent


def stopbench(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, **kw)


def test_world_command_serves_and_exits_on_signals():
    import openai

    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "world"], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True)
        try:
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            run = httpx.post(f"{url}/runs", json={"scenario": "q3_report"}).json()
            client = openai.OpenAI(base_url=run["model_base_url"], api_key="x", max_retries=0)
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.tool_calls[0].function.name == "draft_document"
            proc.send_signal(sig)
            assert proc.wait(10) == 0
        finally:
            proc.kill()
            proc.stdout.close()


def test_world_ends_itself_when_its_owner_is_killed():
    """SIGKILL (or a CI timeout) gives the owner no chance to stop its world, which is in its own session."""
    import psutil

    owner = subprocess.Popen([sys.executable, "-c", (
        "import time; from harness.trial.world_client import WorldProcess\n"
        "w = WorldProcess(); w.start(); print(w.proc.pid, flush=True); time.sleep(60)")],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    world_pid = None
    try:
        world_pid = int(owner.stdout.readline())
        assert psutil.pid_exists(world_pid)
        owner.kill()
        owner.wait(5)
        world = psutil.Process(world_pid)
        world.wait(5)  # raises TimeoutExpired if the world outlives its owner
    finally:
        owner.kill()
        owner.stdout.close()
        if world_pid and psutil.pid_exists(world_pid):
            os.kill(world_pid, signal.SIGKILL)


def test_list_shows_adapters_modes_and_scenarios():
    r = stopbench("list")
    assert r.returncode == 0, r.stderr
    assert "reference" in r.stdout and "stop cancel" in r.stdout
    for name in ("q3_report", "inbox_triage", "parallel_fanout", "long_answer"):
        assert name in r.stdout


def test_bad_arguments_exit_2_with_a_message():
    r = stopbench("run", "--adapter", "nope")
    assert r.returncode == 2 and "unknown adapter 'nope'" in r.stderr
    r = stopbench("run", "--adapter", "reference", "--reps", "0")
    assert r.returncode == 2 and "--reps" in r.stderr


def test_ctrl_c_keeps_rows_leaves_nothing_and_the_rerun_finishes(tmp_path):
    args = ["run", "--adapter", KA + "LeaksOneEmail", "--scenario", "q3_report", "--offset", "at:50ms",
            "--reps", "6", "--out", str(tmp_path)]
    out = raw_file(tmp_path, "known-leaks-one-email")
    # as from a terminal: SIGINT handled (a shell's background job would inherit it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 2):
            time.sleep(0.05)
        assert out.exists(), "no row appeared"
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
        assert proc.wait(30) == 130
        assert "interrupted" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    time.sleep(0.2)
    kept_ids = [json.loads(line)["run_id"] for line in out.read_text().splitlines()]
    assert_nothing_left(kept_ids)
    assert not _worlds_of(proc.pid), "the run's world is still running"
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert 2 <= len(kept) < 6
    r = stopbench(*args)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} current in" in r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and len({r["trial_id"] for r in rows}) == 6


def test_a_run_stopped_as_nox_stops_it_leaves_no_temporary_folder(tmp_path):
    """nox on Ctrl-C: SIGINT to the group, SIGTERM 0.3 s later, SIGKILL 0.2 s after that (nox/popen.py
    shutdown_process): the runner has no time to remove its temporary folder; the folder goes all the same."""
    import glob
    import tempfile

    args = ["run", "--adapter", "reference", "--scenario", "q3_report", "--tools", "mcp", "--reps", "6", "--out",
            str(tmp_path)]  # trials with an MCP server each: the runner's own cleanup takes longer than nox waits
    out = raw_file(tmp_path, "reference")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    folders = f"{tempfile.gettempdir()}/stopbench-{proc.pid}-*"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or not out.read_text().strip()):
            time.sleep(0.05)
        assert out.read_text().strip(), "no row appeared"
        assert glob.glob(folders), "the run has its temporary folder"
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        proc.terminate()
        time.sleep(0.2)
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and glob.glob(folders):
        time.sleep(0.1)
    assert glob.glob(folders) == []
    assert_nothing_left([json.loads(line)["run_id"] for line in out.read_text().splitlines()])


def _worlds_of(runner_pid: int) -> list[int]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(OWNER_ENV) == f"world:{runner_pid}":
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


def test_report_lists_corrupt_lines_and_still_reports(tmp_path):
    r = stopbench("run", "--adapter", KA + "LeaksOneEmail", "--scenario", "q3_report", "--offset", "at:50ms",
                  "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = raw_file(tmp_path, "known-leaks-one-email")
    with out.open("a") as f:
        f.write("{not json\n")
        f.write(json.dumps({"schema_version": 1}) + "\n")
    r = stopbench("report", str(tmp_path))
    assert r.returncode == 2 and f"{out}:2" in r.stderr and f"{out}:3" in r.stderr  # written, and said
    readme = (tmp_path / "README.md").read_text()
    assert f"{out}:2" in readme and f"{out}:3" in readme
    assert "| cancel " in readme and (tmp_path / "summary.csv").exists() and (tmp_path / "site" / "index.html").exists()
    assert "## Capability table, measured" in readme and "can abort      = yes if" in readme
    assert "Saga compensation closes the leak" in readme
    assert (tmp_path / "site" / "lie_ms.png").stat().st_size > 1000  # time-offset trials: their lie ms, a point each
    assert f"{out}:2" in (tmp_path / "site" / "index.html").read_text()  # the page says so too


@pytest.mark.slow
def test_new_adapter_skeleton_passes_the_contract_tests(tmp_path):
    r = stopbench("new-adapter", "acme-agents", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    written = (tmp_path / "acme_agents" / "adapter.py").read_text()
    assert "class AcmeAgentsAdapter(KitAdapter)" in written
    assert "my-framework" not in written and "MyFramework" not in written
    assert "[stop_modes]" in (tmp_path / "acme_agents" / "framework.toml").read_text()
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"),
                           str(tmp_path / "acme_agents")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    assert stopbench("new-adapter", "acme-agents", "--dir", str(tmp_path)).returncode == 2
    # its README's table of stop modes names the modes its framework.toml declares, in order
    from harness.frameworks import load

    declared = list(load(tmp_path / "acme_agents").adapter.stop_modes)
    readme = (tmp_path / "acme_agents" / "README.md").read_text()
    table = readme.split("## Stop modes", 1)[1].split("##", 1)[0]
    assert [line.split("|")[1].strip() for line in table.splitlines()[4:] if line.startswith("|")] == declared
    assert declared == ["task_cancel"]
    # as README says to test it, pytest's own arguments passed through, on the provider-fault scenario too: a 429,
    # a 500 and a dropped answer, each retried by the client at its defaults
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    for scenario in ("q3_report", "flaky_provider"):
        r = subprocess.run([sys.executable, "-m", "harness.cli", "test-adapter", "acme_agents.adapter:ADAPTER", "-v",
                            "--contract-scenario", scenario, "-p", "no:cacheprovider"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
        assert "test_stops_and_closes_in_every_mode[acme_agents.adapter:ADAPTER-task_cancel-async] PASSED" in r.stdout
        assert " 4 passed" in r.stdout


def test_test_adapter_names_the_extra_it_needs(monkeypatch, capsys):
    from harness import cli

    assert "usage: stopbench test-adapter [-h] adapter [pytest_args ...]" in \
        stopbench("test-adapter", "--help").stdout
    monkeypatch.setattr(cli, "missing_of_extra", lambda extra: {"test": ["pytest", "hypothesis"]}.get(extra, []))
    assert cli.main(["test-adapter", "reference", "-x"]) == 2
    assert capsys.readouterr().err == (
        "stopbench test-adapter: error: the contract tests run under pytest, from stopbench's 'test' extra (missing: "
        "pytest): install it with `pip install -e '.[test]'` in your stopbench checkout\n")


@pytest.mark.slow
def test_a_cut_last_line_loses_no_new_row_and_is_reported(tmp_path):
    """#13 item 6: a half-written last line; the next row stands on its own line, run and report name the line."""
    args = ["run", "--adapter", KA + "LeaksOneEmail", "--scenario", "q3_report", "--out", str(tmp_path)]
    assert stopbench(*args, "--offset", "at:50ms").returncode == 0
    raw = raw_file(tmp_path, "known-leaks-one-email")
    raw.write_text(raw.read_text()[:-40])  # the end of the row and its line break are gone
    r = stopbench(*args, "--offset", "at:60ms")
    assert r.returncode == 0 and f"{raw}:1: not valid JSON" in r.stderr
    lines = raw.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["offset"] == "at:60ms"
    rep = stopbench("report", str(tmp_path))
    assert rep.returncode == 2 and f"{raw}:1" in rep.stderr and (tmp_path / "README.md").exists()


def test_report_of_a_folder_without_rows_and_to_an_unwritable_place(tmp_path):
    missing = tmp_path / "nonexistent"
    r = stopbench("report", str(missing))
    assert r.returncode == 2 and "no raw/ folder" in r.stderr and not missing.exists()
    (tmp_path / "raw").mkdir()
    (tmp_path / "afile").write_text("")
    r = stopbench("report", str(tmp_path), "--to", str(tmp_path / "afile" / "x"))
    assert r.returncode == 2 and "cannot write the report there" in r.stderr and "Traceback" not in r.stderr


def test_a_second_run_on_the_same_out_is_refused(tmp_path):
    """#13 item 7: two runs on one --out would run every trial twice."""
    from harness.results.rows import RawFileLock

    with RawFileLock(raw_file(tmp_path, "known-leaks-one-email")):
        r = stopbench("run", "--adapter", KA + "LeaksOneEmail", "--scenario", "q3_report", "--offset", "at:50ms",
                      "--out", str(tmp_path))
    assert r.returncode == 2 and f"another stopbench run (pid {os.getpid()})" in r.stderr
    assert not raw_file(tmp_path, "known-leaks-one-email").read_text()  # no trial ran


def test_bad_command_lines_are_exit_2_not_tracebacks(tmp_path):
    """#13 item 8."""
    (tmp_path / "afile").write_text("")
    cases = [
        (["run", "--adapter", KA + "LeaksOneEmail", "--scenario", "q3_report", "--offset", "at:50ms", "--out",
          str(tmp_path / "afile" / "out")], "cannot write result rows here"),
        (["run", "--adapter", ":"], "give it as package.module:Class"),
        (["run", "--adapter", "reference", "--jobs", "100"], "--jobs '100'"),
        (["world", "--port", "99999"], "--port 99999"),
        (["world", "--port", "-1"], "--port -1"),
    ]
    for argv, message in cases:
        r = stopbench(*argv)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (argv, r.stderr[-500:])
    with __import__("socket").socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        r = stopbench("world", "--port", port)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
    version = stopbench("--version")
    assert version.returncode == 0 and version.stdout.startswith("stopbench ")


def test_subjects_end_when_their_runner_is_killed_outright(tmp_path):
    """#13 item 1 (part): after SIGKILL of the CLI, a subject stuck in stop() does not live on."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--adapter", KA + "HangsInStop",
                             "--scenario", "q3_report", "--offset", "at:50ms", "--out", str(tmp_path)],
                            cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        runner = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        subjects: list[psutil.Process] = []
        while time.monotonic() < deadline and not subjects:  # the subject: a forked stopbench, not the world
            subjects = [c for c in runner.children()
                        if not_a_zombie(c) and "harness.world" not in " ".join(cmdline(c))]
            time.sleep(0.05)
        assert subjects, "no subject was started"
        time.sleep(0.5)  # into the hanging stop()
    finally:
        proc.kill()
        proc.wait(5)
    gone, alive = psutil.wait_procs(subjects, timeout=2)
    alive = [p for p in alive if not_a_zombie(p)]  # a zombie has ended (some containers' pid 1 never reaps)
    for p in alive:
        p.kill()
    assert not alive, f"subjects outlived their runner: {[p.pid for p in alive]}"


def test_a_subjects_own_output_is_kept_with_its_evidence_not_printed(tmp_path):
    from harness.results.evidence import find_trial

    r = stopbench("run", "--adapter", KA + "PrintsALot", "--scenario", "q3_report", "--offset", "at:50ms",
                  "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "framework" not in r.stdout + r.stderr and "helper" not in r.stdout + r.stderr
    (line,) = raw_file(tmp_path, "known-prints-a-lot").read_text().splitlines()
    record = find_trial(tmp_path, json.loads(line)["run_id"])
    printed = record["output"]["subject-output.log"].splitlines()
    assert sorted(printed) == sorted([f"framework says {i}" for i in range(3)] +
                                     [f"framework warns {i}" for i in range(3)] + ["its helper says hi"])
