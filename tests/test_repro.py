"""Reproducers: `stopbench repro RESULTS TRIAL_ID -o FILE` writes one Python file that runs a published trial again
with nothing but stopbench (and the framework) installed, and fails with the message the finding promises. Three
trials of adapters with planted behaviour: a leak, a hang, a duplicate on resume."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from stopbench.repro import promise_pattern
from tests.test_trials import FAST, assert_nothing_left, run

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


ROOT = Path(__file__).resolve().parents[1]
PLANTED_JS = ROOT / "tests" / "known_answer" / "js_emails_after_stop"


def _install_like_npm(folder: Path) -> None:
    """What `npm install` does for the folder's one dependency, `file:../../js/stopbench-tools` (a link), done here
    by hand: the tests reach no package registry."""
    (folder / "node_modules").mkdir(parents=True)
    (folder / "node_modules" / "stopbench-tools").symlink_to(Path("../../../js/stopbench-tools"))


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_reproducer_of_an_adapter_process_carries_its_folder_and_fails_as_promised(tmp_path, monkeypatch):
    """A Node adapter (a built-in framework folder with [protocol]) whose stop leaves a timer that emails 300 ms
    later: the reproducer holds its folder and stopbench-tools (its file: dependency) verbatim, writes them next
    to itself, and fails with the published message."""
    from harness.contract import registry
    from harness.contract.protocol import protocol_adapter
    from harness.frameworks import load
    from harness.trial.runner import RunOptions, run_matrix

    checkout = tmp_path / "checkout"  # laid out as the repository is: adapters/<name>/ beside js/stopbench-tools/
    folder = checkout / "adapters" / "js_emails_after_stop"
    shutil.copytree(PLANTED_JS, folder)
    shutil.copytree(ROOT / "js" / "stopbench-tools", checkout / "js" / "stopbench-tools",
                    ignore=shutil.ignore_patterns("node_modules"))
    _install_like_npm(folder)
    monkeypatch.setattr(registry, "ADAPTERS_DIR", checkout / "adapters")
    results = tmp_path / "results"
    (row,) = run_matrix(protocol_adapter(load(folder)), RunOptions(
        adapter="js-emails-after-stop", out=results, scenarios=["q3_report"], offsets=["at:50ms"],
        tool_styles=["async"], deadlines=FAST))
    assert_nothing_left([row["run_id"]])
    assert (row["status"], row["effects_new"], row["effects_leaked"]) == ("ok", 1, 1), row["reason"]

    out = tmp_path / "elsewhere" / "repro.py"
    out.parent.mkdir()
    assert main(["repro", str(results), row["trial_id"], "-o", str(out)]) == 0
    text = out.read_text()
    namespace: dict = {}
    exec(compile(text.split("\n\ndef main()", 1)[0], str(out), "exec"), namespace)  # its literals, not its trial
    tools = sorted(p.name for p in (ROOT / "js" / "stopbench-tools").iterdir() if p.is_file())
    assert sorted(namespace["NODE_FILES"]) == sorted(
        [f"adapters/js_emails_after_stop/{n}" for n in ("adapter.mjs", "framework.toml", "package.json")]
        + [f"js/stopbench-tools/{n}" for n in tools])
    assert namespace["NODE_FILES"]["adapters/js_emails_after_stop/adapter.mjs"] == \
        (PLANTED_JS / "adapter.mjs").read_text()
    assert namespace["ADAPTER_FOLDER"] == "adapters/js_emails_after_stop"
    published = eval(next(line for line in text.splitlines() if line.startswith("PUBLISHED = "))
                     .removeprefix("PUBLISHED = "))
    assert promise_pattern("StopLied: stop lied (q3_report at:50ms, stop cancel): 1 email sent 56 ms after the stop "
                           "was pressed (email_1: to=ops@example.com, subject=leak, body=sent after stop)"
                           ).fullmatch(published), published

    _install_like_npm(out.parent / "repro_node" / "adapters" / "js_emails_after_stop")  # its first run installs
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(out)], cwd=out.parent, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("stopbench.result.StopLied: "), done.stderr[-3000:]
    assert promise_pattern(published).fullmatch(last.removeprefix("stopbench.result.")), (published, last)
    assert (out.parent / "repro_node" / "js" / "stopbench-tools" / "tools.mjs").read_text() == \
        (ROOT / "js" / "stopbench-tools" / "tools.mjs").read_text()
