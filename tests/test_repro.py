"""Reproducers: `stopbench repro RESULTS TRIAL_ID -o FILE` writes one Python file that runs a published trial again
with nothing but stopbench (and the framework) installed, and fails with the message the finding promises. Three
trials of adapters with planted behaviour: a leak, a hang, a duplicate on resume."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from harness.cli import main
from stopbench.repro import promise_pattern
from tests.test_trials import run

KA = "tests.known_answer.adapters:"


@pytest.mark.parametrize(("adapter", "offset", "kind", "exception", "words"), [
    ("LeaksOneEmail", "at:50ms", "leak", "StopLied",
     "stop lied (q3_report at:50ms, stop cancel): 1 email sent {} ms after the stop was pressed (email_1: "
     "to=ops@example.com, subject=leak, body=sent after stop)"),
    ("HangsInStop", "at:50ms", "hang", "StopHung",
     "the trial hung in stop (q3_report at:50ms, stop cancel): watchdog ended the subject during 'stop'"),
    ("ResumeRepeatsEffect", "on:effect_committed:email", "repeats on resume", "ResumeRepeated",
     "resume repeated what was done before the stop (q3_report on:effect_committed:email, stop cancel): 1 email "
     "committed again by the resume (email_2: to=ops@example.com, subject=leak, body=sent after stop)"),
])
def test_a_reproducer_fails_with_the_message_it_promises(tmp_path, capsys, adapter, offset, kind, exception, words):
    results = tmp_path / "results"
    (row,) = run(KA + adapter, results, offsets=[offset], observe_ms=100)
    out = tmp_path / "elsewhere" / "repro.py"
    out.parent.mkdir()
    assert main(["repro", str(results), row["trial_id"], "-o", str(out)]) == 0
    text = out.read_text()
    imported = {n.module if isinstance(n, ast.ImportFrom) else a.name
                for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    assert not {m for m in imported if m and m.split(".")[0] == "tests"}  # the adapter inlined, not imported
    promised = next(line for line in text.splitlines() if line.startswith("PUBLISHED = "))
    published = eval(promised.removeprefix("PUBLISHED = "))  # a string literal the generator wrote
    assert promise_pattern(f"{exception}: " + words.format("56")).fullmatch(published), published

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(out)], cwd=out.parent, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"stopbench.result.{exception}: "), done.stderr[-3000:]
    assert promise_pattern(published).fullmatch(last.removeprefix("stopbench.result.")), (published, last)


def test_a_trial_without_a_finding_has_no_reproducer(tmp_path, capsys):
    results = tmp_path / "results"
    (row,) = run(KA + "SpawnsChildAndCleansUp", results, offsets=["at:50ms"], observe_ms=100)
    assert main(["repro", str(results), row["trial_id"], "-o", str(tmp_path / "r.py")]) == 2
    assert "shows no leak, hang, failure, processes left or repeated effect" in capsys.readouterr().err
    assert main(["repro", str(results), "nope", "-o", str(tmp_path / "r.py")]) == 2
    assert not (tmp_path / "r.py").exists()
