"""What `nox -s bench` runs for one framework, as data: the matrices of its full run (one `stopbench run`: one
world, one queue, no pause between matrices), read by noxfile.py and by the tests that check every declared
framework's plan is one `stopbench run` accepts.

Stdlib only (noxfile.py imports it before any environment exists).
"""

from __future__ import annotations

from harness.billing import BILLING_MATRIX
from harness.frameworks import Declaration, Framework
from harness.providers import OTHER_PROVIDERS_ANCHORS

#: the tool style of every matrix beyond the main one (which sweeps them all), where the framework runs it in as many
#: of its modes as any other style (else that style: a framework whose modes run no async tools, a CLI's MCP): so
#: that providers, billing profiles and serving add a slice of the matrix and do not multiply every cell of it, and
#: each slice meets the others and the main matrix in the same cells
SLICE_TOOLS = "async"
#: the mitigation comparison: every mode, q3_report at three event anchors, each harness-side mitigation
MITIGATION_MATRIX = {"scenario": "q3_report",
                     "offsets": ("on:llm_request:2", "on:effect_received:email", "on:token:40"),
                     "mitigations": ("saga", "idempotent", "saga+idempotent")}
#: the orphan matrix: every MCP launch x a host that closes or crashes, every mode, at "email in flight" of q3_report
#: (what leaves processes is the MCP client's close, not the anchor)
ORPHAN_MATRIX = {"scenario": "q3_report", "offset": "on:effect_received:email", "tools": "mcp",
                 "launches": ("direct", "launcher", "deaf", "stubborn"), "hosts": ("close", "crash")}
#: the served stop: every mode at "email in flight" and "mid-answer" of q3_report (two conditions: the least that
#: lets the report call a served share apart from the in-process one, harness/results/served_table.py), the slice's
#: tool style, its home provider, served by the server of its runtime and stopped by the client's disconnect and by
#: the cancel endpoint (harness/trial/serve/paths.py); the in-process rows of the same cells are the main matrix's
SERVED_MATRIX = {"scenario": "q3_report", "offsets": ("on:effect_received:email", "on:token:40"),
                 "paths": {"python": ("starlette-sse", "starlette-sse+cancel"),
                           "node": ("node-http", "node-http+cancel")}}


def slice_tools(declaration: Declaration) -> str:
    """The tool style of the framework's matrices beyond the main one: of the styles it declares, one that the
    most of its modes run in (none `unsupported`), SLICE_TOOLS first among equals, then in declared order."""
    def runs(style: str) -> int:
        return sum((mode, style) not in declaration.unsupported for mode in declaration.stop_modes)

    return min(declaration.tool_styles, key=lambda style: (-runs(style), style != SLICE_TOOLS,
                                                            declaration.tool_styles.index(style)))


def served_paths(framework: Framework) -> tuple[str, ...]:
    """The serve paths its full run measures: none for a framework not served (a CLI run from a terminal)."""
    if not framework.served:
        return ()
    return SERVED_MATRIX["paths"]["node" if framework.protocol else "python"]


def bench_args(framework: Framework, reps: str) -> list[str]:
    """`stopbench run` arguments after `--adapter NAME` for the framework's own adapter: the main matrix on its home
    provider (the first it declares), then each other matrix as an `--also`: the mitigation comparison, the orphan
    matrix, each other provider it declares (every scenario and mode at OTHER_PROVIDERS_ANCHORS), the billing matrix
    on every provider (harness/billing.py BILLING_MATRIX), the served stop (SERVED_MATRIX); all but the main and
    the orphan matrix with the slice's tool style (SLICE_TOOLS)."""
    declaration = framework.adapter
    assert declaration is not None
    home, *others = declaration.providers
    m, o, s = MITIGATION_MATRIX, ORPHAN_MATRIX, SERVED_MATRIX
    tools = slice_tools(declaration)
    also = [
        f"--scenario {m['scenario']} --tools {tools} "
        + " ".join(f"--offset {x}" for x in m["offsets"]) + " "
        + " ".join(f"--mitigation {x}" for x in m["mitigations"]),
        f"--scenario {o['scenario']} --offset {o['offset']} --tools {o['tools']} "
        + " ".join(f"--mcp-launch {x}" for x in o["launches"]) + " " + " ".join(f"--host {x}" for x in o["hosts"]),
        *(f"--provider {p} --anchors {OTHER_PROVIDERS_ANCHORS} --tools {tools}" for p in others),
        *(f"--provider {p} --billing {BILLING_MATRIX['billing']} --anchors {BILLING_MATRIX['anchors']} "
          f"--tools {tools} " + " ".join(f"--scenario {x}" for x in BILLING_MATRIX["scenarios"])
          for p in (home, *others)),
    ]
    paths = served_paths(framework)
    if paths:
        also.append(f"--scenario {s['scenario']} --tools {tools} " + " ".join(f"--offset {x}" for x in s["offsets"])
                    + " " + " ".join(f"--serve {x}" for x in paths))
    # every matrix repeated as the main one: the repetitions rule (harness/results/repetitions.py) decides which run
    return ["--provider", home, "--reps", reps, *(a for text in also for a in ("--also", f"{text} --reps {reps}"))]
