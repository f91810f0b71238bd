"""The published report: a scorecard of shares first (each cell k/N, a link to exactly its k trials), a page per
framework and per button, a glossary, numeric CSV and JSON, a timeline for any trial; the site in `site/`,
byte-identical when made twice, light enough to load on a phone, checked in a real headless browser (Chromium)
at phone and desktop width."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from harness.results.report import write_report
from harness.results.scorecard import SHARES
from harness.results.site import mode_texts
from tests.test_trials import KA, run


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    run(KA + "LeaksOneEmail", out, offsets=["at:50ms"], reps=2)  # a thread sends one email after the stop
    run(KA + "CancelsEmailInFlight", out, offsets=["on:effect_received:email"], reps=2)  # in flight, lands
    run(KA + "ResumeRepeatsEffect", out, offsets=["on:effect_committed:email"], reps=2)  # resume: the email again
    run(KA + "IgnoresStop", out, offsets=["on:llm_request:2"], reps=1)  # goes on asking the model
    write_report(out, out)
    return out


@pytest.fixture(scope="module")
def site(results):
    return results / "site"


def _shares(results: Path) -> dict[str, dict[str, tuple[int, int]]]:
    cards = json.loads((results / "summary.json").read_text())["scorecard"]
    return {c["framework"]: {k: (v["k"], v["n"]) for k, v in c["best"]["shares"].items()} for c in cards}


def test_the_report_is_a_site_with_numbers_a_script_can_read(results, site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {"index.html", "details.html", "glossary.html", "frameworks/known-leaks-one-email.html",
            "buttons/known-leaks-one-email--cancel.html", "buttons/known-cancels-email-in-flight--cancel.html"} <= pages
    assert not list(results.glob("*.html")) and not (results / "buttons").exists()  # the site is in site/ alone
    summary = pd.read_csv(results / "summary.csv")
    by = summary.set_index("adapter")
    assert by.loc["known-leaks-one-email", "effects_leaked_median"] == 1
    assert {"rows.csv", "summary.csv", "summary.json", "capability.csv"} <= {p.name for p in site.iterdir()}


def test_the_scorecard_counts_k_of_the_n_trials_where_each_share_applies(results):
    shares = _shares(results)
    in_flight = shares["known-cancels-email-in-flight"]
    assert in_flight["in_flight"] == (2, 2) and in_flight["leaked"] == (2, 2)  # the email in flight landed
    assert in_flight["did_not_stop"] == (0, 2) and in_flight["new_effect"] == (0, 2)  # but no new work
    leaks = shares["known-leaks-one-email"]
    assert leaks["in_flight"] == (0, 0) and leaks["new_effect"] == (2, 2) and leaks["leaked"] == (2, 2)
    assert leaks["did_not_stop"] == (0, 0)  # time-anchored only: no event trial to judge it on
    assert shares["known-resume-repeats"]["resume_repeat"] == (2, 2)
    ignores = shares["known-ignores-stop"]
    assert ignores["did_not_stop"] == (1, 1) and ignores["asked_again"] == (1, 1)


def test_every_share_is_declared_once_with_its_words():
    assert len({s.key for s in SHARES}) == len(SHARES)
    assert [s.label for s in SHARES[:2]] == ["did not stop", "effect in flight landed"]


def test_a_row_that_leaks_or_repeats_on_resume_is_never_green(site):
    index = (site / "index.html").read_text()
    for fw in ("known-cancels-email-in-flight", "known-resume-repeats", "known-leaks-one-email"):
        row = index[index.rindex("<tr", 0, index.index(f">{fw}</a>")):]
        assert row.startswith('<tr class="mixed"') or row.startswith('<tr class="bad"'), row[:40]


def test_claims_name_their_rule_in_words_from_the_code_that_applies_it():
    from harness.results.claims import RULES, rule_text

    assert set(RULES) >= {"keeps_running", "stops_cleanly", "resumes_cleanly", "saga_closes_leak", "orphans_seen"}
    assert rule_text("resumes_cleanly").startswith("Over the trials that resumed")


def test_the_site_is_byte_identical_when_made_twice(results):
    def snapshot() -> dict[str, bytes]:
        return {p.relative_to(results).as_posix(): p.read_bytes() for p in sorted(results.rglob("*"))
                if p.is_file() and "raw" not in p.parts and "evidence" not in p.parts}

    first = snapshot()
    write_report(results, results)
    second = snapshot()
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []


def test_the_site_is_light(site):
    index = (site / "index.html").stat().st_size + sum(p.stat().st_size for p in site.glob("*.png"))
    assert index < 300_000
    assert max(p.stat().st_size for p in site.rglob("*.html")) < 1_000_000
    assert not list(site.rglob("*.svg"))  # plots are PNG: thousands of points as SVG weighed megabytes


def test_mode_texts_come_from_the_adapters_source_without_importing_a_framework():
    texts = mode_texts()
    assert texts[("reference", "cancel")].startswith("cancel the loop task")
    assert texts[("langgraph", "drain")].startswith("RunControl.request_drain()")


# --- in a real browser -------------------------------------------------------------------------------------

def _browser() -> str:
    found = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if found is None:
        if os.environ.get("STOPBENCH_REQUIRE_BROWSER"):
            pytest.fail("no Chromium found (chromium, chromium-browser or google-chrome) and CI requires it")
        pytest.skip("no Chromium here: install chromium to run the report's browser test")
    return found


def _render(browser: str, url: str, profile: Path, budget_ms: int = 20000) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message it logged."""
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--allow-file-access-from-files", "--window-size=1500,1000",
                           "--enable-logging=stderr", "--v=0", f"--virtual-time-budget={budget_ms}", "--dump-dom",
                           url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


#: a page next to index.html that loads the site's pages in an iframe of a given width and measures them: the
#: widest element against the viewport, where the scorecard's cells end, and, for every scorecard cell, the
#: trials its link's target lists
PROBE = """<!doctype html><html><body><iframe id="f" style="border:0;height:900px"></iframe><pre id="out">pending</pre>
<script>
const f = document.getElementById("f");
function load(url, width) {
  return new Promise((done) => {
    f.style.width = width + "px";
    f.onload = () => { f.onload = () => setTimeout(done, 100); f.src = url; };
    f.src = "about:blank";
  });
}
function overflow() {
  const d = f.contentDocument, w = f.contentWindow.innerWidth;
  return {width: w, page: d.documentElement.scrollWidth, body: d.body.scrollWidth};
}
async function main() {
  const out = {widths: {}, links: []};
  for (const page of PAGES) {
    for (const w of [390, 1400]) {
      await load(page, w);
      const m = overflow();
      const cells = Array.from(f.contentDocument.querySelectorAll("table.scorecard td.share"));
      m.cells = cells.length;
      m.cells_off_screen = cells.filter((td) => td.getBoundingClientRect().right > m.width).length;
      out.widths[page + "@" + w] = m;
    }
  }
  await load("index.html", 1400);
  const links = Array.from(f.contentDocument.querySelectorAll("table.scorecard td.share a, table.claims td a[data-k]"))
    .map((a) => [a.getAttribute("href"), +a.dataset.k]);
  for (const [href, k] of links) {
    await load(href, 1400);
    const rows = Array.from(f.contentDocument.querySelectorAll("table.trials tbody tr"));
    const key = new URLSearchParams(href.split("#")[1]);
    const shown = rows.filter((r) => !r.hidden);
    const cell = key.get("cell"), over = key.get("over");
    const flagged = rows.filter((r) =>
      (" " + (cell ? r.dataset.k : r.dataset.n) + " ").includes(" " + (cell || over) + " "));
    out.links.push({href, k, shown: shown.length, flagged: flagged.length,
                    same: shown.every((r) => flagged.includes(r)) && flagged.every((r) => shown.includes(r))});
  }
  document.getElementById("out").textContent = JSON.stringify(out);
}
main();
</script></body></html>"""


def probe(browser: str, site: Path, pages: list[str], profile: Path) -> dict:
    page = site / "probe.html"
    page.write_text(PROBE.replace("PAGES", json.dumps(pages)))
    try:
        dom, console = _render(browser, page.as_uri(), profile, budget_ms=120000)
    finally:
        page.unlink()
    assert console == []
    start = dom.index('<pre id="out">') + len('<pre id="out">')
    return json.loads(dom[start:dom.index("</pre>")].replace("&amp;", "&"))


def test_every_page_fits_a_phone_and_every_scorecard_cell_lists_exactly_its_trials(site, tmp_path):
    browser = _browser()
    pages = ["index.html", "glossary.html", "details.html", "frameworks/known-cancels-email-in-flight.html",
             "buttons/known-cancels-email-in-flight--cancel.html"]
    got = probe(browser, site, pages, tmp_path / "profile")
    for name, m in got["widths"].items():
        assert m["page"] <= m["width"] and m["body"] <= m["width"], (name, m)  # nothing wider than the screen
    desktop = got["widths"]["index.html@1400"]
    assert desktop["cells"] == 4 * len(SHARES) and desktop["cells_off_screen"] == 0  # every share in view
    scorecard = [link for link in got["links"] if "#cell=" in link["href"] and "claim-" not in link["href"]]
    assert len(scorecard) == 4 * len(SHARES)
    for link in got["links"]:
        assert link["same"] and link["shown"] == link["k"] == link["flagged"], link
    assert any(link["k"] > 0 for link in scorecard)


def test_report_renders_in_a_headless_browser(site, tmp_path):
    browser = _browser()
    dom, console = _render(browser, (site / "index.html").as_uri(), tmp_path / "profile")
    assert console == []
    first = dom.index("<section")
    assert dom.index('id="scorecard"') < dom.index('id="claims"') and dom[first:first + 40].count("scorecard") == 1
    assert "known-leaks-one-email" in dom[first:dom.index('id="claims"')]
    page = site / "buttons" / "known-resume-repeats--cancel.html"
    dom, console = _render(browser, page.as_uri() + "#trial=1", tmp_path / "profile")
    assert console == []
    timeline = dom[dom.index('id="timeline"'):]
    assert "=== STOP PRESSED ===" in timeline and "ms from the stop" in timeline
    assert "logical key" in timeline and "args {" in timeline  # what the effect was
    after_resume = timeline.split("resume_started")[1]
    assert "DUPLICATE: the same effect as email_1" in after_resume  # the resume sent the very same email
