"""The measured facts of each adapter folder's stop buttons, written into its README between markers.

An adapter's README explains what each button presses and what happens; the numbers (shares, verdicts, medians,
trial counts) are the report's, written here from the published rows so that they are never a second, hand-typed
copy that drifts at every republish. Every value is a cell the report already makes: the scorecard's shares
(harness/results/scorecard.py, judgement.py), the capability table (capability.py, report.py `capability`), the
summary (report.py `summary`), a button's cells at a moment (counterparts.py `moment_cells`) and the orphan matrix
(orphans.py); nothing is computed another way here. `python -m harness.results.schema --update README.md` is the
model: a generated block and a test that it is current.

    python -m harness.results.readme_blocks --update [RESULTS_DIR]   # rewrite the blocks (default: results)
    python -m harness.results.readme_blocks --check [RESULTS_DIR]    # exit 1 and name the stale READMEs
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.frameworks import ROOT, Framework, discover
from harness.results import schema
from harness.results.markup import slug
from harness.results.provider_tables import NOT_MEASURED_COST

BEGIN = ("<!-- measured: generated from the published rows by `python -m harness.results.readme_blocks --update`; "
         "do not edit by hand -->")
END = "<!-- end of measured -->"
#: the heading a README gets above the block when it has no markers yet (the block goes at its end)
HEADING = "## Measured"
#: the folder of published rows, relative to the repository
RESULTS = ROOT / "results"


@dataclass(frozen=True)
class Measured:
    """What the report computes once from a results folder's rows, read by every folder's block."""

    main: Any  # the main matrix's rows (a DataFrame)
    cards: list[dict[str, Any]]  # harness/results/scorecard.py scorecard
    capability: Any  # report.py capability: one line per button
    summary: Any  # report.py summary: one line per button
    orphans: Any  # orphans.py orphan_table: one line per adapter x MCP launch
    providers: Any = None  # provider_tables.py per_provider: one line per provider x button (two providers or more)
    billing: Any = None  # provider_tables.py billing_costs: one line per best button x provider
    served: Any = None  # served_table.py served_table: one line per button x serve path
    orchestrators: Any = None  # orchestrators.py orchestrator_table: one line per CLI button x scenario x launch


def measure(results_dir: Path) -> Measured:
    """The report's tables over the rows of `results_dir/raw/` (skipped, corrupt lines left out as the report
    leaves them out)."""
    from harness.results.capability import capability_rows
    from harness.results.orchestrators import orchestrator_table
    from harness.results.orphans import orphan_table
    from harness.results.provider_tables import billing_costs, per_provider
    from harness.results.report import capability, load, summary
    from harness.results.scorecard import scorecard
    from harness.results.selection import in_main_matrix
    from harness.results.served_table import served_table
    from harness.results.settings import at_home_rows, scenario_billing
    from harness.scenario import load_scenarios

    every, _ = load(results_dir)
    full = at_home_rows(every)  # as the report's headline reads them
    if full.empty:
        return Measured(full, [], full, full, full, full, full, full)
    main = full[in_main_matrix(full)]
    caps = capability_rows(main)
    cards = scorecard(main, caps)
    return Measured(main, cards, capability(main, caps), summary(main), orphan_table(full),
                    per_provider(every, scenario_billing(load_scenarios())), billing_costs(every, cards),
                    served_table(full), orchestrator_table(full))


def _markdown(table) -> str:
    """A table as a Markdown pipe table without padding: a README's diff shows the cells that changed, not
    realigned columns."""
    def cell(v: Any) -> str:
        return schema.NO_VALUE if v is None or v != v else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(cell, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _adapters(folder: Framework) -> list[str]:
    """The adapter names a folder declares: its own, then its variants'."""
    return [d.name for d in folder.declarations] or [folder.name]


def _button_link(site: str, adapter: str, mode: str, text: str, cell: str = "") -> str:
    anchor = f"#cell={cell}" if cell else ""
    return f"[{text}]({site}/buttons/{slug(adapter, mode)}.html{anchor})"


def _scorecard(card: dict[str, Any], adapters: list[str], site: str):
    """The card's buttons of these adapters, in the scorecard's order: each share as k/N (interval), linked to
    exactly its trials on the button's page."""
    import pandas as pd

    from harness.results.report import share_text
    from harness.results.scorecard import SHARES

    lines = []
    for b in card["buttons"]:
        if b["adapter"] not in adapters:
            continue
        place = "best" if b["best"] else "ranked" if b["ranked"] else "fewer conditions"
        lines.append({"adapter": b["adapter"], "mode": _button_link(site, b["adapter"], b["mode"], f"`{b['mode']}`"),
                      "rank": place,
                      **{s.label: _button_link(site, b["adapter"], b["mode"], share_text(b["shares"][s.key]), s.key)
                         for s in SHARES}})
    return pd.DataFrame(lines)


def _of(table, adapters: list[str]):
    """The lines of a report table that are these adapters' (its own order), without its index."""
    if table is None or table.empty or "adapter" not in table:
        return table
    return table[table["adapter"].isin(adapters)].reset_index(drop=True)


def _moments(main, adapters: list[str]):
    """Each button at each moment (scenario x offset, every tool style together): the side-by-side's cells of a
    button at a moment, and the shares of trials that asked the model again and that leaked an effect."""
    import pandas as pd

    from harness.results.counterparts import COLUMNS, moment_cells
    from harness.results.judgement import PREDICATE
    from harness.results.scorecard import base_rows
    from harness.results.selection import BUTTON, MOMENT

    base = base_rows(main)
    base = base[base["adapter"].isin(adapters)]
    lines = []
    for (adapter, mode, scenario, offset), rows in base.groupby([*BUTTON, *MOMENT], sort=True):
        cells = moment_cells(rows)
        asked, leaked = PREDICATE["asked_again"].share(rows), PREDICATE["leaked"].share(rows)
        lines.append({"adapter": adapter, "mode": f"`{mode}`", "scenario": scenario, "offset": f"`{offset}`",
                      **{header: cells[key] for key, header in COLUMNS},
                      PREDICATE["asked_again"].label: _ratio(asked.k, asked.n),
                      PREDICATE["leaked"].label: _ratio(leaked.k, leaked.n)})
    return pd.DataFrame(lines)


def _ratio(k: int, n: int) -> str:
    return schema.ratio_text(k, n) if n else schema.NO_VALUE


def commits(rows) -> str:
    """The commits these rows were measured at, short."""
    return ", ".join(sorted(rows["git_sha"].astype(str).str[:7].unique()))


def block(folder: Framework, measured: Measured, results: str) -> str:
    """The folder's block, markers included: its buttons' scorecard shares, capability verdicts, trial counts and
    medians, each button at each moment, and its orphan matrix. `results`: the results folder as the README links
    it (its site in `results/site`)."""
    site = f"{results}/site"
    adapters = _adapters(folder)
    card = next((c for c in measured.cards if c["framework"] == folder.name), None)
    if card is None:
        return "\n".join([BEGIN, "", f"No published rows of {', '.join(adapters)} yet: `stopbench report` reads "
                          "them once a run has written them.", "", END])
    from harness.results.capability import VERDICTS
    from harness.results.report import CAPABILITY

    from_rows = _of(measured.main, adapters)
    capability = _of(measured.capability, adapters)
    capability = capability.assign(mode=[_button_link(site, a, m, f"`{m}`") for a, m in
                                         zip(capability["adapter"], capability["mode"], strict=True)])
    summary = _of(measured.summary, adapters)
    summary = summary.assign(mode=[f"`{m}`" for m in summary["mode"]])
    orphans = _of(measured.orphans, adapters)
    moments = _moments(measured.main, adapters)
    verdicts = ", ".join(f'"{v.column}"' for v in VERDICTS)
    medians = ", ".join(f'"{schema.label(n)}"' for n in CAPABILITY)
    parts = [
        BEGIN, "",
        f"From {len(from_rows):,} trials of the main matrix in the published rows (measured at {commits(from_rows)}). "
        f"The site has [{folder.name}'s page]({site}/frameworks/{slug(folder.name)}.html), every button's trials "
        f"and a timeline per trial; its [glossary]({site}/glossary.html) says what each column counts.", "",
        "**Scorecard shares** (mitigation none, skipped trials left out): k/N = k of the N trials where it applies, "
        f"then the 95% interval, each linked to exactly its trials; rank: the best set by the rule under [the report's "
        f"scorecard]({results}/README.md), ranked, or measured under fewer conditions than its framework.", "",
        _markdown(_scorecard(card, adapters, site)),
        f"**Capability verdicts** ({verdicts}: the rules under the report's capability table) and the medians over "
        f"the ok trials ({medians}):", "",
        _markdown(capability),
        "**Trials** of each button (every mitigation; medians over its ok trials, `a..b` where they disagree):", "",
        _markdown(summary),
        "<details><summary>Each button at each moment (scenario x offset, every tool style): medians over the ok "
        "trials; resume ok, model asked again and effect leaked as k/N of the trials</summary>", "",
        _markdown(moments),
        "</details>", "",
    ]
    if not orphans.empty:
        parts += ["**Orphan matrix** (the MCP server launched each way, after `close()` and after a host crash):", "",
                  _markdown(orphans)]
    providers = _of(measured.providers, adapters)
    if providers is not None and not providers.empty:
        parts += ["**On each provider** (through the framework's own client for it, at its defaults; the report's "
                  "per-provider table: verdicts, medians over ok trials, and whether the button is in the best set "
                  "on that provider):", "", _markdown(providers.assign(mode=[f"`{m}`" for m in providers["mode"]]))]
    billing = measured.billing
    if billing is not None and not billing.empty:  # where another profile than the default was played
        from harness.billing import DEFAULT_PROFILE, PROFILES

        played = [name for name in PROFILES if name != DEFAULT_PROFILE.name and name in billing]
        billing = billing[(billing["framework"] == folder.name)
                          & (billing[played] != NOT_MEASURED_COST).any(axis=1)].reset_index(drop=True)
    if billing is not None and not billing.empty:
        parts += ["**What a stop costs under each billing profile** (tokens billed after the stop by its best "
                  "buttons, median [min..max] (ok trials), over the conditions where the other profile was played):",
                  "", _markdown(billing)]
    served = _of(measured.served, adapters)
    if served is not None and not served.empty:
        parts += ["**Served** (each button's served trials beside its in-process trials of the same conditions: k/N "
                  "of each judgement, medians, whether the server's run ended, and what the path changes beyond the "
                  "noise):", "", _markdown(served.assign(mode=[f"`{m}`" for m in served["mode"]]))]
    orchestrators = _of(measured.orchestrators, adapters)
    if orchestrators is not None and not orchestrators.empty:
        parts += ["**What the CLI left after each stop** (the report's orchestrator table: trials with processes of "
                  "the run alive 5 s and 30 s after the stop, k/n; medians of how many, their memory, the model asked "
                  "and effects landed after the stop, resume's repeats; how the process the user started exited):",
                  "", _markdown(orchestrators.assign(mode=[f"`{m}`" for m in orchestrators["mode"]]))]
    parts.append(END)
    return "\n".join(parts)


def with_block(text: str, new_block: str) -> str:
    """`text` with its block replaced by `new_block`; appended under HEADING when it has none yet."""
    if BEGIN in text and END in text:
        start, end = text.index(BEGIN), text.index(END) + len(END)
        return text[:start] + new_block + text[end:]
    return text.rstrip("\n") + f"\n\n{HEADING}\n\n{new_block}\n"


def results_link(readme: Path, results_dir: Path) -> str:
    """`results_dir` relative to the README (the report writes its README there and its site in site/)."""
    return Path(os.path.relpath(results_dir.resolve(), readme.parent.resolve())).as_posix()


def expected(results_dir: Path, root: Path = ROOT, measured: Measured | None = None) -> dict[Path, str]:
    """Each adapter folder's README as it reads with its block written from the rows of `results_dir`."""
    measured = measured or measure(results_dir)
    out = {}
    for folder in sorted(discover(root), key=lambda f: f.folder.name):
        readme = folder.folder / "README.md"
        if readme.exists():
            out[readme] = with_block(readme.read_text(), block(folder, measured, results_link(readme, results_dir)))
    return out


def update(results_dir: Path, root: Path = ROOT) -> list[Path]:
    """Rewrite every adapter README's block from the rows of `results_dir`; the READMEs that changed."""
    changed = []
    for readme, text in expected(results_dir, root).items():
        if readme.read_text() != text:
            readme.write_text(text)
            changed.append(readme)
    return changed


def stale(results_dir: Path, root: Path = ROOT) -> list[Path]:
    """The adapter READMEs whose block is not what the rows of `results_dir` give."""
    return [readme for readme, text in expected(results_dir, root).items() if readme.read_text() != text]


USAGE = "usage: python -m harness.results.readme_blocks --update|--check [RESULTS_DIR]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("--update", "--check") or len(argv) > 2:
        print(USAGE, file=sys.stderr)
        return 2
    results_dir = Path(argv[1]) if len(argv) == 2 else RESULTS
    if not (results_dir / "raw").is_dir():
        print(f"{results_dir}: no raw/ folder of result rows", file=sys.stderr)
        return 2
    if argv[0] == "--check":
        found = stale(results_dir)
        for readme in found:
            print(f"{readme}: measured block is stale: run `python -m harness.results.readme_blocks --update`")
        return 1 if found else 0
    changed = update(results_dir)
    for readme in changed:
        print(f"{readme}: measured block rewritten")
    print(f"{len(changed)} adapter README(s) rewritten" if changed else "every adapter README's block is current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
