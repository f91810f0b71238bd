"""Issue #14's launch variants and host crash, planted: survivors known by construction
(tests/known_answer/orphans.py has the table), counted exactly, and nothing left running afterwards."""

from __future__ import annotations

import json

import pytest

from tests.test_trials import run

KA = "tests.known_answer.orphans:"


@pytest.mark.slow
def test_each_launch_variant_leaves_its_known_survivors_after_close_and_after_a_host_crash(tmp_path):
    rows = run(KA + "EndsDirectChildOnly", tmp_path, offsets=["at:1500ms"], tool_styles=["mcp"],
               mcp_launches=["direct", "launcher", "deaf", "stubborn"], hosts=["close", "crash"], jobs=4)
    assert {r["tool_style"] for r in rows} == {"mcp"}  # the launch is a field of its own
    got = {(r["mcp_launch"], r["host"]): r for r in rows}
    assert all(r["status"] == "ok" for r in rows), [(k, r["reason"]) for k, r in got.items() if r["status"] != "ok"]
    after_close = {k[0]: (r["orphans"], r["reaped"]) for k, r in got.items() if k[1] == "close"}
    assert after_close == {"direct": (0, 0), "launcher": (2, 2), "deaf": (0, 0), "stubborn": (1, 1)}
    after_crash = {k[0]: (r["crash_orphans"], r["reaped"]) for k, r in got.items() if k[1] == "crash"}
    assert after_crash == {"direct": (0, 0), "launcher": (0, 0), "deaf": (1, 1), "stubborn": (1, 1)}
    for (_launch, host), r in got.items():
        if host == "crash":
            assert r["orphans"] is None and r["resume_ok"] is None  # no close, no resume: not measured
            assert (r["crash_orphan_rss_bytes"] > 5_000_000) == (r["crash_orphans"] > 0)
            assert 0 <= r["crash_orphan_cpu_s"] < 0.5  # an idle server burns next to nothing
        else:
            assert r["crash_orphans"] is None and r["crash_orphan_cpu_s"] is None
            assert (r["orphan_rss_bytes"] > 5_000_000) == (r["orphans"] > 0)
    # the trial ids of the defaults are as they always were; the variants say theirs
    ids = {r["trial_id"].split("|", 4)[4] for r in rows}
    assert ids == {"mcp|none|0", "mcp+launcher|none|0", "mcp+deaf|none|0", "mcp+stubborn|none|0",
                   "mcp|none|host:crash|0", "mcp+launcher|none|host:crash|0", "mcp+deaf|none|host:crash|0",
                   "mcp+stubborn|none|host:crash|0"}


@pytest.mark.slow
def test_the_report_reads_the_orphan_matrix_apart_and_judges_the_claim_over_every_condition(tmp_path):
    from harness.results.report import write_report

    run(KA + "EndsDirectChildOnly", tmp_path, offsets=["at:1500ms"], tool_styles=["mcp"],
        mcp_launches=["direct", "launcher", "stubborn"], hosts=["close", "crash"], jobs=3)
    write_report(tmp_path, tmp_path)
    text = (tmp_path / "README.md").read_text()
    table = text.split("## Orphans in the wild")[1].split("\n## ")[0]
    lines = [[c.strip() for c in x.strip("|").split("|")] for x in table.splitlines() if x.startswith("| known")]
    # adapter, launch, after close: trials, left processes, orphans, ...; after crash: trials, left processes, ...
    header = [c.strip() for c in table.splitlines()[2].strip("|").split("|")]
    assert header[5] == "after close: orphan RSS MB" and 1 < float(lines[2][5].split()[0]) < 500  # MB, not bytes
    assert [(x[1], x[3], x[4], x[8], x[9]) for x in lines] == [
        ("direct", "0/1", "0", "0/1", "0"), ("launcher", "1/1", "2", "0/1", "0"), ("stubborn", "1/1", "1", "1/1", "1")]
    assert ("| Orphan processes need a reaper | confirmed | orphans_seen | 0/1 | trials that left processes |"
            in " ".join(text.split()))  # the main matrix's trials; the evidence names every condition:
    [claim] = [c for c in json.loads((tmp_path / "summary.json").read_text())["claims"]
               if c["id"] == "orphans_need_a_reaper"]
    assert claim["evidence"] == (
        "3/6 trials left processes that had to be reaped: main matrix after close(): 0/1; launch variants after "
        "close(): 2/2 (known-ends-direct-child-only/launcher, known-ends-direct-child-only/stubborn); launch "
        "variants after a host crash: 1/3 (known-ends-direct-child-only/stubborn)")
    capability = text.split("## Capability table")[1].split("\n## ")[0]
    assert "| known-ends-direct-child-only | cancel | 1 |" in " ".join(capability.split())  # the main matrix only


def test_a_stop_that_hung_still_counts_the_processes_it_left():
    """llama-index's `cancel_run` waits for a server deaf to EOF until its 5 s deadline: the row is hung, and the
    server it left is what the harness reaped. The table's counts take it; a crash that never came (the stop
    hung before it) measured nothing and counts nowhere."""
    from harness.results.cells import frame
    from harness.results.orphans import orphan_table

    cell = {"adapter": "fw", "mode": "cancel", "scenario": "q3_report", "offset": "on:effect_received:email",
            "tool_style": "mcp", "mcp_launch": "deaf", "mitigation": "none"}
    close = [{**cell, "host": "close", "status": s, "orphans": n, "orphan_rss_bytes": n * 23.7e6,
              "orphan_cpu_s": 0.01 * n} for s, n in (("hung", 1), ("hung", 1), ("ok", 0))]
    crash = [{**cell, "host": "crash", "status": s, "crash_orphans": n, "crash_orphan_rss_bytes": None if n is None
              else n * 23.7e6, "crash_orphan_cpu_s": None if n is None else 0.0}
             for s, n in (("hung", None), ("hung", None), ("ok", 1))]
    (line,) = orphan_table(frame(close + crash)).to_dict("records")
    assert (line["after close: trials"], line["after close: left processes"], line["after close: orphans"],
            line["after close: orphan RSS MB"]) == ("3 (2 hung)", "2/3", "1 (0..1)", "23.7 (0..23.7)")
    assert (line["after crash: trials"], line["after crash: left processes"], line["after crash: crash orphans"]) \
        == ("3 (2 hung)", "1/1", "1")


@pytest.mark.slow
def test_a_claim_about_exit_reads_the_trials_whose_app_closed_not_a_host_crash(tmp_path):
    """A server deaf to stdin EOF outlives a crashed host for every framework; whether an MCP client "shuts down
    cleanly on exit" is read where the app closed: 0 of the 2 closed trials left a process, while the crash did."""
    from harness.results.claims import judge
    from harness.results.report import load

    run(KA + "EndsDirectChildOnly", tmp_path, offsets=["at:1500ms"], tool_styles=["mcp"],
        mcp_launches=["direct", "deaf"], hosts=["close", "crash"], jobs=2)
    rows, _ = load(tmp_path)
    claim = {"framework": "*", "claim": "the MCP client leaves its server on exit"}
    verdict, evidence = judge({**claim, "rule": "orphans_after_close"}, rows)
    assert verdict == "refuted" and evidence.startswith("0/2 trials left processes")
    assert "after a host crash" not in evidence
    verdict, evidence = judge({**claim, "rule": "orphans_seen"}, rows)
    assert verdict == "confirmed" and evidence.startswith("1/4 trials left processes")


def test_a_host_crash_is_watched_past_its_floor_while_a_survivor_is_still_at_work():
    """A process still on (or waiting for) a CPU when the floor ends is ending or starting, not yet a survivor: the
    watch goes on until it parks or exits (up to the settle deadline); one that sleeps is counted at the floor."""
    import subprocess
    import sys
    import time

    import psutil

    from harness.trial.reap import HostCrash

    spins = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.6\n"
                              "while time.process_time() < end: pass"])
    sleeps = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        found = {p.pid: {"process": psutil.Process(p.pid), "source": "registered", "role": None}
                 for p in (spins, sleeps)}
        crash = HostCrash(time.monotonic_ns(), found, window_ms=100, settle_s=60)
        while not crash.over():
            time.sleep(0.02)
            spins.poll()  # reaped once it exits (a zombie is not alive either way)
        seen = crash.survivors()
        assert spins.poll() == 0  # the watch lasted until the spinning one had ended
        assert [s["pid"] for s in seen["survivors"]] == [sleeps.pid]
        assert seen["watched_ms"] >= 100 and seen["window_ms"] == 100
    finally:
        for p in (spins, sleeps):
            p.kill()
            p.wait()
