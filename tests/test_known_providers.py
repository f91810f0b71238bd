"""Known answers for the provider dimension: a planted adapter that leaves a stream at the stop, run as a trial on
each provider's wire (through its SDK) under each billing profile; exact tokens, requests and billed tokens after
the stop, and the row's provider. A provider the adapter does not declare is refused before any trial."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.contract.registry import AdapterError, load_adapter
from harness.providers import PROVIDERS
from harness.results.selection import CELL
from harness.scenario import load_scenarios
from harness.trial.runner import RunOptions, plan
from tests.known_answer.provider_adapters import LeavesStreamAtStop
from tests.test_trials import FAST, KA, run

PA = "tests.known_answer.provider_adapters:"
ADAPTER = PA + "LeavesStreamAtStop"
TEXT_TOKENS, READ = 10, LeavesStreamAtStop.READ
#: billing profile -> tokens billed after the stop (all unread): the client leaves after READ of TEXT_TOKENS
BILLED_AFTER_STOP = {"stops_at_disconnect": 0, "runs_to_completion": TEXT_TOKENS - READ}


def one_answer(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "one_answer.yaml").write_text(yaml.safe_dump({
        "name": "one_answer", "prompt": "Write the Q3 summary.", "turns": [{"text_tokens": TEXT_TOKENS}],
        "offsets": [f"on:token:{READ}"], "pacing": {"tokens_per_s": 10, "ttft_ms": 0}}))
    return folder


@pytest.mark.parametrize("billing", list(BILLED_AFTER_STOP))
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_tokens_billed_after_a_stop_on_each_provider(tmp_path, provider, billing):
    (row,) = run(ADAPTER, tmp_path, scenarios=["one_answer"], scenarios_dir=one_answer(tmp_path),
                 providers=[provider], billing=billing, tool_styles=["async"], deadlines=FAST)
    assert row["status"] == "ok", row["reason"]
    billed = BILLED_AFTER_STOP[billing]
    assert (row["provider"], row["billing_profile"]) == (provider, billing)
    assert (row["tokens_after_stop"], row["tokens_unread_after_stop"], row["llm_requests_after_stop"]) == (
        billed, billed, 0)
    assert row["tokens_total"] == READ + billed
    suffix = ("" if provider == "openai" else f"|provider:{provider}") + f"|billing:{billing}|0"
    assert row["trial_id"].endswith(suffix)


@pytest.mark.parametrize("billing", list(BILLED_AFTER_STOP))
def test_what_the_frameworks_usage_says_against_what_the_world_billed(tmp_path, billing):
    """The client says it used the READ tokens it read; the world generated READ, then (runs_to_completion) the
    rest of the answer after the client left: the usage leaves those off the bill. A client with no usage account
    says nothing (null, not 0)."""
    scenarios = one_answer(tmp_path)
    (row,) = run(PA + "LeavesStreamReportsWhatItRead", tmp_path / "reads", scenarios=["one_answer"],
                 scenarios_dir=scenarios, billing=billing, tool_styles=["async"], deadlines=FAST)
    assert row["status"] == "ok", row["reason"]
    assert (row["usage_reported_tokens"], row["usage_unreported_tokens"]) == (READ, BILLED_AFTER_STOP[billing])
    (silent,) = run(ADAPTER, tmp_path / "silent", scenarios=["one_answer"], scenarios_dir=scenarios,
                    billing=billing, tool_styles=["async"], deadlines=FAST)
    assert (silent["usage_reported_tokens"], silent["usage_unreported_tokens"]) == (None, None)


def test_a_provider_the_adapter_does_not_declare_is_refused():
    opts = RunOptions(adapter=KA + "LeaksOneEmail", providers=["gemini"])
    with pytest.raises(AdapterError, match=r"no client for provider 'gemini' \(it declares: openai"):
        plan(load_adapter(opts.adapter), opts, load_scenarios())


def test_the_cli_refuses_it_with_exit_2(capsys):
    from harness.cli import main

    assert main(["run", "--adapter", KA + "LeaksOneEmail", "--provider", "anthropic"]) == 2
    assert "no client for provider 'anthropic'" in capsys.readouterr().err


def test_each_provider_is_a_cell_of_its_own():
    """Trials of two providers never count as repetitions of each other: their trial ids and cells differ."""
    scenarios = load_scenarios()
    opts = RunOptions(adapter="reference", scenarios=["q3_report"], offsets=["on:token:40"], tool_styles=["async"],
                      providers=list(PROVIDERS))
    specs = plan(load_adapter("reference"), opts, scenarios)
    assert [s.provider for s in specs] == list(PROVIDERS)
    assert len({s.trial_id(scenarios["q3_report"].digest) for s in specs}) == len(PROVIDERS)
    assert specs[0].trial_id(scenarios["q3_report"].digest).endswith("|async|none|0")  # openai: the id as before
    assert "provider" in CELL and "billing_profile" in CELL


def test_another_provider_at_event_anchors_only_is_one_more_matrix_of_the_run():
    """What the full run does for a framework's second and third provider (noxfile.py, OTHER_PROVIDERS_ANCHORS):
    an --also matrix of that provider at event anchors, beside the home provider's whole matrix."""
    from harness.cli import _also
    from harness.trial.runner import plan_all

    scenarios = load_scenarios()
    base = RunOptions(adapter="reference", scenarios=["q3_report"], tool_styles=["async"])
    base.also = [_also(base, "--scenario q3_report --tools async --provider gemini --anchors event")]
    specs = plan_all(load_adapter("reference"), base, scenarios)
    home = [s for s in specs if s.provider == "openai"]
    other = [s for s in specs if s.provider == "gemini"]
    assert [s.offset.text for s in home] == [o.text for o in scenarios["q3_report"].offsets]
    assert [s.offset.text for s in other] == [o.text for o in scenarios["q3_report"].offsets if o.is_event]
    assert len(specs) == len(home) + len(other) and 0 < len(other) < len(home)


def test_a_process_whose_providers_differ_from_its_declaration_is_refused():
    from harness.contract.protocol import ProtocolError, check_declared, handed_over, parse_capabilities

    said = {"protocol": 1, **handed_over(LeavesStreamAtStop)}  # what the process is handed, said back whole
    where = "known-leaves-stream-at-stop: capabilities"
    assert said["providers"] == list(PROVIDERS)
    check_declared(LeavesStreamAtStop, said, where)
    with pytest.raises(ProtocolError, match=r'field \'providers\': the process says \["openai"\]; the adapter '
                                            r'declares \["openai", "anthropic", "gemini"\]'):
        check_declared(LeavesStreamAtStop, {**said, "providers": ["openai"]}, where)
    with pytest.raises(ProtocolError, match=r"field 'providers': expected a list of some of openai, anthropic, "
                                            r"gemini, each once"):
        parse_capabilities({**said, "providers": ["bedrock"]}, where)
