"""The measured numbers in the adapter READMEs are the report's, written between markers from the published rows:
a figure edited by hand, or rows republished without rewriting the blocks, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.results import readme_blocks, schema
from harness.results.rows import append_row

ROOT = Path(__file__).resolve().parents[1]
#: a k/N figure typed in prose or a table (not a version, a path, an anchor or a URL)
SHARE_FIGURE = re.compile(r"(?<![\w:./-])\d+/\d+(?![\w./-])")
FRAMEWORK_TOML = """\
dependencies = []
packages = []

[stop_modes]
cancel = "task.cancel() on the run"
abandon = "stop waiting for the run"
"""
README = f"""\
# fw: a planted framework

`cancel` cancels the run's task; `abandon` stops waiting and lets the run go on.

## What we found

{readme_blocks.BEGIN}
a hand-typed 3/9 that the generator replaces
{readme_blocks.END}

The email in flight lands after either button.
"""


def planted_trial(mode: str, offset: str, rep: int, **measured) -> dict:
    """One trial of adapter `fw` in q3_report, async tools, mitigation none, ok unless `measured` says else."""
    kind = "time" if offset.startswith("at:") else "event"
    return {"schema_version": schema.SCHEMA_VERSION, "trial_id": f"fw-{mode}-{offset}-{rep}", "adapter": "fw",
            "adapter_ref": "fw", "framework": "fw", "mode": mode, "mitigation": "none", "scenario": "q3_report",
            "offset": offset, "offset_kind": kind, "tool_style": "async", "mcp_launch": "direct", "host": "close",
            "rep": rep, "status": "ok", "reason": None, "failed_step": None, "trigger_precise": True,
            "llm_requests_after_stop": 0, "effects_new": 0, "tokens_after_stop": 0, "threads_left": 0,
            "effects_after_stop": 0, "effects_in_flight": 0, "effects_leaked": 0, "orphans": 0,
            "job_ended_ms": 5.0, "stop_return_ms": 2.0, "lie_ms": 0.0, "resume_ok": True, "resume_error": None,
            "resume_llm_replays": 0, "resume_duplicate_effects": 0, "versions": {"fw": "1.0"},
            "git_sha": "abcdef0123", "finished_at": "2026-01-01T00:00:00+00:00", **measured}


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with one adapter folder (fw: cancel, abandon) and a results folder of its rows: at the email in
    flight both buttons let the email land; mid answer `abandon` lets the model run on (40 tokens, one request),
    and one of its trials hung in the stop."""
    root, results = tmp_path / "repo", tmp_path / "repo" / "results"
    folder = root / "adapters" / "fw"
    folder.mkdir(parents=True)
    (folder / "framework.toml").write_text(FRAMEWORK_TOML)
    (folder / "adapter.py").write_text("")
    (folder / "README.md").write_text(README)
    email, mid = "on:effect_received:email", "on:token:40"
    rows = [planted_trial(mode, email, rep, effects_after_stop=1, effects_in_flight=1, effects_leaked=1)
            for mode in ("cancel", "abandon") for rep in (1, 2)]
    rows += [planted_trial("cancel", mid, rep, tokens_after_stop=1) for rep in (1, 2)]
    rows += [planted_trial("abandon", mid, 1, tokens_after_stop=40, llm_requests_after_stop=1, lie_ms=120.0),
             planted_trial("abandon", mid, 2, status="hung", failed_step="stop", reason="'stop' overran 5s",
                           tokens_after_stop=None, lie_ms=None, resume_ok=None, resume_llm_replays=None,
                           resume_duplicate_effects=None)]
    for row in rows:
        append_row(results / "raw" / "fw.jsonl", row)
    return root, results


def test_the_block_of_planted_rows_is_exactly_the_reports_cells(planted):
    root, results = planted
    readme = root / "adapters" / "fw" / "README.md"
    assert readme_blocks.update(results, root) == [readme]
    text = readme.read_text()
    before, block_and_after = text.split(readme_blocks.BEGIN)
    assert before == README.split(readme_blocks.BEGIN)[0]  # the prose is kept as written
    assert block_and_after.split(readme_blocks.END)[1] == "\n\nThe email in flight lands after either button.\n"
    assert "hand-typed" not in text
    assert readme_blocks.update(results, root) == []  # the same rows give the same bytes
    assert readme_blocks.stale(results, root) == []
    expected = (Path(__file__).parent / "known_answer" / "readme_block.md").read_text()
    assert readme_blocks.BEGIN + block_and_after.split(readme_blocks.END)[0] + readme_blocks.END + "\n" == expected


def test_a_figure_edited_by_hand_or_a_new_row_makes_the_block_stale(planted):
    root, results = planted
    readme = root / "adapters" / "fw" / "README.md"
    readme_blocks.update(results, root)
    written = readme.read_text()
    readme.write_text(written.replace("| 2/2 |", "| 1/2 |", 1))
    assert readme_blocks.stale(results, root) == [readme]
    readme.write_text(written)
    append_row(results / "raw" / "fw.jsonl", planted_trial("cancel", "on:token:40", 3, tokens_after_stop=7))
    assert readme_blocks.stale(results, root) == [readme]


def test_a_readme_without_markers_gets_the_block_at_its_end(planted):
    root, results = planted
    readme = root / "adapters" / "fw" / "README.md"
    readme.write_text("# fw\n\nProse only.\n")
    readme_blocks.update(results, root)
    text = readme.read_text()
    assert text.startswith(f"# fw\n\nProse only.\n\n{readme_blocks.HEADING}\n\n{readme_blocks.BEGIN}\n")
    assert text.endswith(f"{readme_blocks.END}\n")


@pytest.mark.slow
@pytest.mark.timeout(900)  # the report's tables over every published row: ~50 s of CPU, shared with the workers
def test_every_adapter_readme_holds_the_block_of_the_published_rows():
    """The published rows in results/ against the blocks of adapters/*/README.md: a stale block names its README
    and the command that rewrites it."""
    expected = readme_blocks.expected(ROOT / "results")
    assert len(expected) == len(list((ROOT / "adapters").glob("*/framework.toml")))
    for readme, text in expected.items():
        assert readme_blocks.BEGIN in readme.read_text(), f"{readme}: no measured block"
        assert readme.read_text() == text, \
            f"{readme}: measured block is stale: run `python -m harness.results.readme_blocks --update`"


def test_the_command_line_updates_and_checks(planted, capsys):
    root, results = planted
    assert readme_blocks.main(["--check", str(results), "extra"]) == 2
    assert readme_blocks.main(["--update", str(root / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert readme_blocks.USAGE in err and f"{root / 'nowhere'}: no raw/ folder of result rows" in err


def test_no_adapter_readme_types_a_share_outside_its_block():
    """The prose says what a button does; how often it did it is the block's."""
    typed = []
    for readme in sorted((ROOT / "adapters").glob("*/README.md")):
        text = readme.read_text()
        start, end = text.find(readme_blocks.BEGIN), text.find(readme_blocks.END)
        prose = text[:start] + text[end:] if 0 <= start < end else text
        typed += [f"{readme.relative_to(ROOT)}: {figure}" for figure in SHARE_FIGURE.findall(prose)]
    assert typed == []


def test_a_typed_share_is_found_and_a_version_or_anchor_is_not():
    assert SHARE_FIGURE.findall("leaked 9/9, at:150ms, openai 3.57.0, PR #6564, a/b 1/2") == ["9/9", "1/2"]
    assert SHARE_FIGURE.findall("see results/raw/x.jsonl and https://h/1/2") == []


def test_the_block_shows_each_provider_and_the_served_stop_when_the_rows_have_them(planted):
    """Rows of a second provider and served rows add the report's per-provider and served lines to the block,
    exactly as those tables make them."""
    root, results = planted
    email, mid = "on:effect_received:email", "on:token:40"
    rows = [planted_trial(mode, offset, rep, provider="anthropic", tokens_after_stop=7)
            for mode in ("cancel", "abandon") for offset in (email, mid) for rep in (1, 2)]
    rows += [planted_trial("cancel", offset, rep, serve_path="starlette-sse", client_stop="disconnect",
                           served_stop_seen_ms=3.0, served_run_ended=True) for offset in (email, mid) for rep in (1, 2)]
    for row in rows:
        append_row(results / "raw" / "fw.jsonl", {**row, "trial_id": row["trial_id"] + "-" + str(
            row.get("provider", "")) + str(row.get("serve_path", ""))})
    readme_blocks.update(results, root)
    block = (root / "adapters" / "fw" / "README.md").read_text().split(readme_blocks.BEGIN)[1]
    providers = block.split("**On each provider**")[1].split("\n\n")[1].splitlines()
    assert providers[0].startswith("| provider | adapter | mode | N | best |")
    assert [line.split(" | ")[:4] for line in providers[2:]] == [
        ["| anthropic", "fw", "`abandon`", "4"], ["| anthropic", "fw", "`cancel`", "4"],
        ["| openai", "fw", "`abandon`", "4"], ["| openai", "fw", "`cancel`", "4"]]
    served = block.split("**Served**")[1].split("\n\n")[1].splitlines()
    assert [line.split(" | ")[:6] for line in served[2:]] == [
        ["| fw", "`cancel`", "in-process", "", "4", "4/4"], ["| fw", "`cancel`", "starlette-sse", "disconnect", "4",
                                                               "4/4"]]
    assert served[3].endswith("| 4/4 | tie |")
    assert "**What a stop costs" not in block  # no other billing profile was played


def test_a_clis_block_shows_what_it_left_after_each_stop(planted):
    """Rows that took a census (an orchestrator's) add the report's orchestrator lines: survivors at 5 s and 30 s,
    their memory, and how the process the user started exited."""
    root, results = planted
    for rep in (1, 2):
        append_row(results / "raw" / "fw.jsonl", planted_trial(
            "cancel", "on:effect_received:email", rep, trial_id=f"fw-census-{rep}", survivors_5s=2 * (rep - 1),
            survivors_30s=rep - 1, survivors_30s_rss_bytes=(rep - 1) * 26_200_000, exit_status=-9))
    readme_blocks.update(results, root)
    block = (root / "adapters" / "fw" / "README.md").read_text().split(readme_blocks.BEGIN)[1]
    lines = block.split("**What the CLI left after each stop**")[1].split("\n\n")[1].splitlines()
    assert lines[0].startswith("| adapter | mode | scenario | mcp_launch | trials | left at 5 s | left at 30 s |")
    cells = lines[2].split(" | ")
    assert cells[:7] == ["| fw", "`cancel`", "q3_report", "direct", "2", "1/2", "1/2"]
    assert cells[-1] == "-9 x2 |"


def test_a_block_names_the_commits_of_its_own_rows(planted):
    root, results = planted
    append_row(results / "raw" / "other.jsonl", {**planted_trial("cancel", "on:token:40", 1), "adapter": "other",
                                                 "adapter_ref": "other", "framework": "other", "trial_id": "other-1",
                                                 "git_sha": "1234567def"})
    readme_blocks.update(results, root)
    block = (root / "adapters" / "fw" / "README.md").read_text().split(readme_blocks.BEGIN)[1]
    assert "in the published rows (measured at abcdef0)." in block
