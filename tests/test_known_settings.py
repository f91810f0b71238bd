"""Known answers for the settings a button is measured in: a framework's headline reads it at home (its home
provider, its scenarios' billing); the per-provider table and the billing table read the rest, with numbers known
by construction."""

from __future__ import annotations

import itertools

import pandas as pd

from harness.results.capability import capability_rows
from harness.results.provider_tables import billing_costs, per_provider
from harness.results.scorecard import scorecard
from harness.results.settings import headline
from tests.test_known_judgements import CONDITIONS, trial

HOMES = {"fw": "openai"}
BILLING = {"q3_report": "stops_at_disconnect", "inbox_triage": "stops_at_disconnect"}


def on(provider: str, billing: str = "stops_at_disconnect", **measured) -> dict:
    return {"provider": provider, "billing_profile": billing, **measured}


def test_the_headline_reads_the_home_provider_and_the_scenarios_own_billing():
    """`a` and `b` stop at home; `a` goes on in every trial on anthropic and in those the world played under another
    billing profile. Read at home, the two are tied for best; pooled with the other settings' rows, `a` would drop
    out of the best set."""
    rows = [trial("a", s, o, 1, **on("openai")) for s, o in CONDITIONS]
    rows += [trial("a", s, o, 1, **on("anthropic", llm_requests_after_stop=1)) for s, o in CONDITIONS]
    rows += [trial("b", s, o, 1, **on("openai")) for s, o in CONDITIONS]
    rows += [trial("a", s, o, 1, **on("openai", "runs_to_completion", llm_requests_after_stop=1))
             for s, o in CONDITIONS]
    df = pd.DataFrame(rows)
    home = df[headline(df, HOMES, BILLING)]
    assert len(home) == 20 and set(home["provider"]) == {"openai"} and set(home["billing_profile"]) == {
        "stops_at_disconnect"}
    assert scorecard(home, capability_rows(home))[0]["best_set"] == [("fw", "a"), ("fw", "b")]
    assert scorecard(df, capability_rows(df))[0]["best_set"] == [("fw", "b")]  # what pooling would have said


def test_rows_before_providers_existed_read_as_openai_at_home():
    df = pd.DataFrame([trial("a", s, o, 1) for s, o in CONDITIONS])
    assert headline(df, HOMES, BILLING).all()
    assert not headline(df, {"fw": "gemini"}, BILLING).any()  # a framework at home on gemini: not these rows


def test_each_provider_gets_its_own_verdicts_and_best_set():
    rows = [trial(m, s, o, 1, **on(p, llm_requests_after_stop=int(p == "anthropic" and m == "a")))
            for m, p, (s, o) in itertools.product(("a", "b"), ("openai", "anthropic"), CONDITIONS)]
    table = per_provider(pd.DataFrame(rows), BILLING)
    got = {(r["provider"], r["mode"]): (r["N"], r["best"], r["can abort"]) for r in table.to_dict("records")}
    assert got == {("anthropic", "a"): (10, "", "no (10/10)"), ("anthropic", "b"): (10, "best", "yes"),
                   ("openai", "a"): (10, "best", "yes"), ("openai", "b"): (10, "best", "yes")}


def test_one_provider_has_no_per_provider_table():
    assert per_provider(pd.DataFrame([trial("a", s, o, 1) for s, o in CONDITIONS]), BILLING).empty


def test_a_stop_costs_what_each_profile_bills_over_the_same_conditions():
    """At home the button stops at token 40: under stops_at_disconnect nothing more is billed; the world played
    runs_to_completion at two of the ten conditions (41 and 1000 tokens generated after the client left). The
    default's column reads those two conditions only, not the eight others (where it billed 7)."""
    billed = {CONDITIONS[0]: 41, CONDITIONS[1]: 1000}
    rows = [trial("a", s, o, r, **on("openai", tokens_after_stop=0 if (s, o) in billed else 7))
            for (s, o), r in itertools.product(CONDITIONS, (1, 2))]
    rows += [trial("a", s, o, r, **on("openai", "runs_to_completion", tokens_after_stop=n))
             for ((s, o), n), r in itertools.product(billed.items(), (1, 2))]
    rows += [trial("a", s, o, 1, **on("gemini", tokens_after_stop=3)) for s, o in CONDITIONS]
    df = pd.DataFrame(rows)
    home = df[headline(df, HOMES, BILLING)]
    cards = scorecard(home, capability_rows(home))
    table = billing_costs(df, cards).to_dict("records")
    assert table == [
        {"framework": "fw", "button": "fw/a", "provider": "gemini", "conditions": 10,
         "stops_at_disconnect": "3 [3..3] (10)", "runs_to_completion": "not measured"},
        {"framework": "fw", "button": "fw/a", "provider": "openai", "conditions": 2,
         "stops_at_disconnect": "0 [0..0] (4)", "runs_to_completion": "520.5 [41..1000] (4)"},
    ]
