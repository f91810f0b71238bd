"""The repetition rule `agree`: a third repetition only where it can tell something (harness/results/repetitions.py)."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.contract.registry import load_adapter
from harness.results.repetitions import kept_by_rule
from harness.scenario import load_scenarios
from harness.trial.runner import RunOptions, plan
from tests.known_answer.adapters import LeaksEveryOtherTrial
from tests.test_trials import KA, run


def _row(offset: str, rep: int, scenario: str = "q3_report", **counts) -> dict:
    return {"adapter": "a", "mode": "cancel", "scenario": scenario, "scenario_hash": "h", "offset": offset,
            "offset_kind": "time" if offset.startswith("at:") else "event", "tool_style": "async",
            "mcp_launch": "direct", "mitigation": "none", "host": "close", "rep": rep, "status": "ok",
            "tokens_after_stop": 0, "effects_leaked": 0, **counts}


def test_a_third_repetition_is_kept_only_where_it_can_tell_something():
    scenarios = load_scenarios()
    agree = [_row("on:token:40", r) for r in range(3)]
    differ = [_row("on:llm_request:2", r, tokens_after_stop=r) for r in range(3)]
    timed = [_row("at:150ms", r) for r in range(3)]
    parallel = [_row("on:token:40", r, scenario="parallel_fanout") for r in range(3)]
    one_missing = [_row("on:effect_received:email", r) for r in (0, 2)]
    kept = kept_by_rule([*agree, *differ, *timed, *parallel, *one_missing], scenarios)
    dropped = [r for r in [*agree, *differ, *timed, *parallel, *one_missing] if r not in kept]
    assert dropped == [agree[2]]


def test_shards_keep_a_cells_repetitions_together():
    scenarios = load_scenarios()
    for k in (1, 2, 3):
        specs = plan(load_adapter("reference"), RunOptions(adapter="reference", reps=3, shard=f"{k}/3"), scenarios)
        reps: dict = {}
        for s in specs:
            reps.setdefault(s.cell, []).append(s.rep)
        assert all(sorted(r) == [0, 1, 2] for r in reps.values()), k


def test_under_agree_a_run_skips_third_repetitions_whose_first_two_agree(tmp_path):
    rows = run(KA + "IgnoresStop", tmp_path / "agree", offsets=["on:effect_received:email"], reps=3,
               reps_rule="agree")
    assert sorted(r["rep"] for r in rows) == [0, 1]
    again = run(KA + "IgnoresStop", tmp_path / "agree", offsets=["on:effect_received:email"], reps=3,
                reps_rule="agree")
    assert again == []  # a rerun plans the same: nothing left to do


def test_a_run_with_nothing_to_do_says_so_in_one_line_and_starts_nothing(tmp_path):
    """As a fresh clone's bench of published rows: the first two repetitions are there and agree, the third is not
    needed; the run says it has nothing to do and runs nothing (no world, no trial)."""
    import io

    from harness.results.rows import raw_file
    from harness.trial.runner import run_matrix

    def bench() -> tuple[list[dict], str]:
        log = io.StringIO()
        rows = run_matrix(load_adapter(KA + "IgnoresStop"), RunOptions(
            adapter=KA + "IgnoresStop", scenarios=["q3_report"], offsets=["on:effect_received:email"], reps=3,
            reps_rule="agree", out=tmp_path), log=log)
        return rows, log.getvalue()

    first, log = bench()
    assert sorted(r["rep"] for r in first) == [0, 1]
    assert log.splitlines()[0] == (
        f"stopbench: {KA}IgnoresStop: 3 to run, 1 of them only if their cells' first 2 disagree, about 1 min "
        f"(2.0 s a trial, jobs=1; 3 planned; 0 current in {raw_file(tmp_path, 'known-ignores-stop')})")
    again, log = bench()
    assert again == []
    assert log == (f"stopbench: {KA}IgnoresStop: 0 trials to run: every cell's rows are current (3 planned; 2 "
                   f"current in {raw_file(tmp_path, 'known-ignores-stop')}; 1 later repetition(s) not needed: "
                   "their cells' first 2 agree)\n")


def test_under_agree_a_cell_whose_first_two_disagree_runs_its_third(tmp_path, monkeypatch):
    monkeypatch.setattr(LeaksEveryOtherTrial, "counter", tmp_path / "trials")
    rows = run(KA + "LeaksEveryOtherTrial", tmp_path / "out", offsets=["on:llm_request:2"], reps=3,
               reps_rule="agree")
    assert sorted((r["rep"], r["effects_leaked"]) for r in rows) == [(0, 1), (1, 0), (2, 1)]


@pytest.mark.parametrize("bad", ["some", ""])
def test_an_unknown_reps_rule_is_a_clear_error(bad, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["run", "--adapter", "reference", "--reps-rule", bad, "--out", str(tmp_path)])
    assert e.value.code == 2 and "--reps-rule" in capsys.readouterr().err
