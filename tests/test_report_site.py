"""The published report (issue #15): a scorecard first, a page per framework and per button, numeric CSV and
JSON, and a timeline for any trial, checked in a real headless browser (Chromium)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pandas as pd
import pytest

from harness.results.report import write_report
from harness.results.site import mode_texts
from tests.test_trials import KA, run


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    run(KA + "LeaksOneEmail", out, offsets=["at:50ms"], reps=2)  # a thread sends one email after the stop
    run(KA + "CancelsEmailInFlight", out, offsets=["on:effect_received:email"], reps=2)  # in flight, lands
    write_report(out, out)
    return out


def test_the_report_is_a_site_with_numbers_a_script_can_read(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {"index.html", "details.html", "frameworks/known-leaks-one-email.html",
            "buttons/known-leaks-one-email--cancel.html", "buttons/known-cancels-email-in-flight--cancel.html"} <= pages
    summary = pd.read_csv(site / "summary.csv")
    assert summary["effects_leaked_median"].dtype.kind == "f" and summary["effects_leaked_median"].tolist() == [1, 1]
    assert summary[["trials", "ok"]].values.tolist() == [[2, 2], [2, 2]]
    cards = {c["framework"]: c["best"] for c in json.loads((site / "summary.json").read_text())["scorecard"]}
    in_flight = cards["known-cancels-email-in-flight"]
    assert (in_flight["mode"], in_flight["event_trials"], in_flight["went_on"], in_flight["effects_leaked"]) == (
        "cancel", 2, 0, 1.0)  # the email was in flight: not new work, but it landed and was never undone
    assert (cards["known-leaks-one-email"]["event_trials"], cards["known-leaks-one-email"]["effects_leaked"]) == (0, 1)


def test_mode_texts_come_from_the_adapters_source_without_importing_a_framework():
    texts = mode_texts()
    assert texts[("reference", "cancel")].startswith("cancel the loop task")
    assert texts[("langgraph", "drain")].startswith("RunControl.request_drain()")


def _browser() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def _render(browser: str, url: str) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message it logged."""
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--virtual-time-budget=5000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def test_report_renders_in_a_headless_browser(site):
    browser = _browser()
    if browser is None:
        if os.environ.get("STOPBENCH_REQUIRE_BROWSER"):
            pytest.fail("no Chromium found (chromium, chromium-browser or google-chrome) and CI requires it")
        pytest.skip("no Chromium here: install chromium to run the report's browser test")
    dom, console = _render(browser, (site / "index.html").as_uri())
    assert console == []
    first = dom.index("<section")
    assert dom.index('id="scorecard"') < dom.index('id="claims"') and dom[first:first + 40].count("scorecard") == 1
    assert "known-leaks-one-email" in dom[first:dom.index('id="claims"')]
    page = site / "buttons" / "known-cancels-email-in-flight--cancel.html"
    dom, console = _render(browser, page.as_uri() + "#trial=1")
    assert console == []
    timeline = dom[dom.index('id="timeline"'):]
    assert "=== STOP PRESSED ===" in timeline and 'class="after"' in timeline
    assert "effect_committed (kind=email" in timeline.split("STOP PRESSED")[1]  # the email landed after the stop
