"""Known answers for "the same button, served" (harness/results/served_table.py): planted rows, exact cells."""

from __future__ import annotations

from harness.results.cells import frame
from harness.results.served_table import TIE, served_table

EMAIL, TOKEN, LLM = "on:effect_received:email", "on:token:40", "on:llm_request:2"


def row(mode: str, offset: str, rep: int, serve: str = "in-process", *, tokens: int = 0, requests: int = 0,
        leaked: int = 0, status: str = "ok", seen: float | None = None, ended: bool | None = None,
        provider: str = "openai") -> dict:
    served = serve != "in-process"
    return {"trial_id": f"x|{mode}|{offset}|{serve}|{provider}|{rep}", "adapter": "x", "framework": "x",
            "mode": mode, "scenario": "q3_report", "offset": offset, "offset_kind": "event", "tool_style": "async",
            "mitigation": "none", "host": "close", "mcp_launch": "direct", "provider": provider,
            "billing_profile": "stops_at_disconnect", "serve_path": serve,
            "client_stop": {"starlette-sse": "disconnect", "starlette-sse+cancel": "cancel_endpoint"}.get(serve),
            "status": status, "failed_step": None, "trigger_precise": True, "job_ended_ms": None,
            "tokens_after_stop": tokens, "llm_requests_after_stop": requests, "effects_new": 0,
            "effects_leaked": leaked, "served_stop_seen_ms": seen if served else None,
            "served_run_ended": ended if served else None, "rep": rep}


def planted():
    rows = []
    for offset in (EMAIL, TOKEN):
        for rep in (0, 1):
            rows.append(row("cancel", offset, rep))  # in-process: stops
            # a server that ignores the disconnect: the whole job runs on
            rows.append(row("cancel", offset, rep, "starlette-sse", tokens=60, requests=1, leaked=1, ended=False))
            # the cancel endpoint presses the same button: the in-process counts
            rows.append(row("cancel", offset, rep, "starlette-sse+cancel", seen=4.0, ended=True))
    # in-process rows the served matrix did not sweep: not in the comparison
    rows += [row("cancel", LLM, rep, tokens=5) for rep in (0, 1)]
    rows += [row("cancel", EMAIL, rep, provider="gemini", tokens=9) for rep in (0, 1)]
    # one condition only: a difference that cannot be called beyond the noise
    rows += [row("drain", EMAIL, rep) for rep in (0, 1)]
    rows += [row("drain", EMAIL, rep, "starlette-sse", tokens=60, requests=1, ended=False) for rep in (0, 1)]
    return frame(rows)


def test_each_served_path_beside_the_in_process_rows_of_its_conditions():
    t = served_table(planted()).set_index(["mode", "serve_path"])
    inproc = t.loc[("cancel", "in-process")]
    assert inproc["N"] == 4 and inproc["did not stop"] == "0/4" and inproc["tokens billed > 1"] == "0/4"
    ignores = t.loc[("cancel", "starlette-sse")]
    assert ignores["N"] == 4 and ignores["client_stop"] == "disconnect"
    assert ignores["did not stop"] == "4/4" and ignores["effect leaked"] == "4/4"
    assert ignores["server's run ended"] == "0/4"
    assert ignores["against in-process"] == "more: did not stop, tokens billed > 1, model asked again, effect leaked"
    cancel = t.loc[("cancel", "starlette-sse+cancel")]
    assert cancel["against in-process"] == TIE and cancel["server's run ended"] == "4/4"
    assert cancel["did not stop"] == "0/4"


def test_one_condition_is_a_tie_whatever_the_counts():
    t = served_table(planted()).set_index(["mode", "serve_path"])
    assert t.loc[("drain", "starlette-sse"), "did not stop"] == "2/2"
    assert t.loc[("drain", "in-process"), "did not stop"] == "0/2"
    assert t.loc[("drain", "starlette-sse"), "against in-process"] == TIE


def test_no_served_row_no_table():
    rows = planted()
    assert served_table(rows[rows["serve_path"] == "in-process"]).empty
