"""Served trials (harness/trial/serve/): planted servers around an adapter whose own stop is right, each with the exact
counts after the client's stop that its reaction leaves; the shipped paths agree with the in-process stop for it."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

from harness.results import schema
from harness.trial.serve.paths import IN_PROCESS
from tests.known_answer.served import LATE_MS, slow_email_scenarios
from tests.test_trials import FAST
from tests.test_trials import run as run_trials

ADAPTER = "tests.known_answer.served:CancelsTheLoop"
KA = "tests.known_answer.served:"
AT_FIRST_REQUEST = ["on:llm_request:1"]


#: a served trial's start launches a server process (and Chromium): room for both on a loaded machine
DEADLINES = replace(FAST, start=30)


def run(adapter: str, tmp_path, **kw) -> list[dict]:
    return run_trials(adapter, tmp_path, deadlines=DEADLINES, **kw)


def counts(row: dict) -> tuple:
    """Tokens, model requests and effects after the stop."""
    assert row["status"] == "ok", row["reason"]
    return row["tokens_after_stop"], row["llm_requests_after_stop"], row["effects_after_stop"]


def by_path(rows: list[dict]) -> dict[str, dict]:
    return {r["serve_path"]: r for r in rows}


def test_a_server_that_stops_on_the_disconnect_leaks_what_the_in_process_stop_does(tmp_path):
    rows = by_path(run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[IN_PROCESS, KA + "STOPS"]))
    inproc, served = rows[IN_PROCESS], rows[KA + "STOPS"]
    # the first request was held at the anchor: its 11 tokens come after the stop, nothing else does
    assert counts(inproc) == counts(served) == (11, 0, 0)
    assert (inproc["client_stop"], inproc["served_stop_seen_ms"], inproc["served_run_ended"]) == (None, None, None)
    assert served["client_stop"] == "disconnect"
    assert served["served_stop_seen_ms"] is not None and served["served_run_ended"] is True
    assert served["served_run_ended_ms"] >= served["served_stop_seen_ms"]
    assert (served["threads_left"], served["tasks_left"], served["children_left"], served["orphans"]) == (0, 0, 0, 0)


def test_a_server_that_ignores_the_disconnect_runs_the_whole_job(tmp_path):
    (row,) = run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[KA + "IGNORES_DISCONNECT"])
    # q3_report's 11 + 10 + 60 tokens, its two later requests, its email: the run went on to its end
    assert counts(row) == (81, 2, 1)
    assert row["effects_new"] == 1
    assert row["served_stop_seen_ms"] is None  # it never reacted
    assert row["served_run_ended"] is True and row["job_error"] is None  # completed, not cancelled


def test_a_server_that_notices_late_leaks_what_ran_meanwhile(tmp_path):
    rows = by_path(run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, scenarios=["q3_slow_email"],
                       scenarios_dir=slow_email_scenarios(tmp_path / "scenarios"),
                       serve_paths=[KA + "STOPS", KA + "NOTICES_LATE"]))
    assert counts(rows[KA + "STOPS"]) == (11, 0, 0)
    late = rows[KA + "NOTICES_LATE"]
    # meanwhile: the first two answers (11 + 10 tokens), the second request, and the email sent then, which the
    # late cancel cannot call back
    assert counts(late) == (21, 1, 1)
    assert (late["effects_new"], late["effects_in_flight"]) == (1, 0)
    assert late["served_stop_seen_ms"] >= LATE_MS
    assert late["served_run_ended"] is True and late["job_error"] == "CancelledError"


def test_a_server_that_cancels_the_run_but_not_its_thread_leaks_the_thread_s_email(tmp_path):
    (row,) = run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[KA + "LEAVES_ITS_THREAD"])
    # the run stopped as in-process (11 tokens, nothing more); the server's own thread, asleep in it past the
    # observation floor, kept the trial open (the server's audit) and sent its email
    assert counts(row) == (11, 0, 1)
    assert row["effects_new"] == 1 and row["effects_leaked"] == 1
    assert row["served_run_ended"] is True


@pytest.mark.parametrize("path", ["starlette-sse", "starlette-sse+cancel"])
def test_the_shipped_server_stops_the_run_on_the_client_s_stop(tmp_path, path):
    (row,) = run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[path])
    assert counts(row) == (11, 0, 0)
    assert row["client_stop"] == {"starlette-sse": "disconnect", "starlette-sse+cancel": "cancel_endpoint"}[path]
    assert row["served_stop_seen_ms"] is not None and row["served_run_ended"] is True
    assert row["close_ok"] is True and row["orphans"] == 0


def test_a_bad_serve_path_is_refused_naming_it(tmp_path):
    from harness.contract.registry import AdapterError

    with pytest.raises(AdapterError, match="--serve 'nginx' is none of in-process, starlette-sse"):
        run(ADAPTER, tmp_path, serve_paths=["nginx"])


def test_rows_written_before_the_serving_dimension_read_as_in_process():
    row = schema.with_defaults({"trial_id": "x", "adapter": "a", "tokens_after_stop": 3})
    assert (row["serve_path"], row["client_stop"], row["served_stop_seen_ms"], row["served_run_ended"],
            row["served_run_ended_ms"]) == (IN_PROCESS, None, None, None, None)


# --- in a real browser -------------------------------------------------------------------------------------

def _need_chromium() -> None:
    from harness.trial.serve.browser import BrowserError, chromium

    try:
        chromium()
    except BrowserError as e:
        if os.environ.get("STOPBENCH_REQUIRE_BROWSER"):
            pytest.fail(str(e))
        pytest.skip(str(e))


@pytest.mark.parametrize("server, expected", [("STOPS", (11, 0, 0)), ("IGNORES_DISCONNECT", (81, 2, 1))])
def test_the_browser_s_stop_and_the_plain_client_s_disconnect_agree(tmp_path, server, expected):
    """The chat page's Stop (the fetch aborted in Chromium) reaches the server as the plain client's disconnect
    does: the same counts, the same reaction, for a server that stops and one that ignores it."""
    _need_chromium()
    rows = by_path(run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST,
                       serve_paths=[KA + server, KA + server + "_BROWSER"]))
    plain, browser = rows[KA + server], rows[KA + server + "_BROWSER"]
    assert counts(plain) == counts(browser) == expected
    assert (plain["client_stop"], browser["client_stop"]) == ("disconnect", "abort_fetch")
    assert (plain["served_stop_seen_ms"] is None) == (browser["served_stop_seen_ms"] is None) == (server != "STOPS")
    assert plain["served_run_ended"] is browser["served_run_ended"] is True
    assert (browser["children_left"], browser["orphans"]) == (0, 0)  # the browser is the user's, not the run's


def test_the_shipped_browser_path_stops_the_run(tmp_path):
    _need_chromium()
    (row,) = run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=["starlette-sse+browser"])
    assert counts(row) == (11, 0, 0)
    assert row["client_stop"] == "abort_fetch" and row["served_run_ended"] is True


# --- the JS path: a Node HTTP handler ---------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_node_handler_stops_the_run_on_the_request_s_abort_signal_and_its_stop_endpoint(tmp_path):
    rows = by_path(run(KA + "JsCancelsTheLoop", tmp_path, offsets=AT_FIRST_REQUEST,
                       serve_paths=[IN_PROCESS, "node-http", "node-http+cancel"]))
    assert counts(rows[IN_PROCESS]) == counts(rows["node-http"]) == counts(rows["node-http+cancel"]) == (11, 0, 0)
    for path, how in (("node-http", "disconnect"), ("node-http+cancel", "cancel_endpoint")):
        row = rows[path]
        assert row["client_stop"] == how and row["served_stop_seen_ms"] is not None, row
        assert row["served_run_ended"] is True and row["job_error"] == "CancelledError"
        assert (row["tasks_left"], row["threads_left"], row["orphans"]) == (0, 0, 0)


def test_served_rows_are_kept_out_of_the_main_matrix():
    from harness.results.selection import CELL, in_main_matrix

    assert in_main_matrix({}) and in_main_matrix({"serve_path": IN_PROCESS})
    assert not in_main_matrix({"serve_path": "starlette-sse"})
    assert "serve_path" in CELL  # a served trial is a cell of its own, never a repetition of the in-process one


def test_a_served_row_of_the_same_code_and_versions_is_not_run_again(tmp_path):
    (row,) = run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[KA + "STOPS"])
    assert {"starlette", "sse-starlette", "uvicorn"} <= set(row["versions"])  # the serving stack is named
    assert run(ADAPTER, tmp_path, offsets=AT_FIRST_REQUEST, serve_paths=[KA + "STOPS"]) == []
