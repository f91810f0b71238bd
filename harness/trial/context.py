"""What an adapter gets for a trial (its TrialContext and toolbox), made in one place: the subject makes it for an
adapter it hosts itself, a served trial's server process for the adapter it hosts (harness/trial/serve/hosted.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.contract.adapter import McpServer, TrialContext
from harness.owner import OWNER_ENV, run_marker
from harness.providers import PROVIDERS
from harness.scenario import Scenario
from harness.stop_button import STOP_BUTTON_FILE, StopButton
from harness.tools.mcp_launch import server_command
from harness.tools.toolbox import Toolbox
from harness.trial.spec import SubjectPlan


def trial_toolbox(plan: SubjectPlan) -> tuple[Any, Toolbox]:
    """The trial's saga log (None without the saga mitigation) and the toolbox whose calls it records."""
    run, mitigation = plan.run, plan.spec.mitigation
    saga_log = mitigation.saga_log(run.workdir)
    toolbox = Toolbox(run.services_base_url, key_policy=mitigation.key_policy(run.run_id, run.workdir),
                      on_attempt=saga_log.attempt if saga_log else None)
    return saga_log, toolbox


def trial_context(plan: SubjectPlan, scenario: Scenario, toolbox: Toolbox, owner_pid: int,
                  stop_handled: Callable[[int], None]) -> TrialContext:
    """The adapter's context; `owner_pid` is the runner's pid the owner marker names (the subject's parent)."""
    spec, run = plan.spec, plan.run
    command, args = server_command(spec.mcp_launch, ["--run-url", run.services_base_url,
                                                    *spec.mitigation.mcp_server_args(run.workdir, run.run_id)])
    mcp = McpServer(command=command, args=tuple(args), env={OWNER_ENV: run_marker(run.run_id, owner_pid)})
    return TrialContext(
        run_id=run.run_id, scenario=scenario, model_base_url=run.model_base_url,
        services_base_url=run.services_base_url, model_name=PROVIDERS[spec.provider].model_name,
        mode=spec.mode, tool_style=spec.tool_style, toolbox=toolbox, mcp=mcp, workdir=run.workdir, seed=spec.seed,
        provider=spec.provider,
        stop_button=StopButton(run.workdir / STOP_BUTTON_FILE),  # there if the agent shares it (ctx.mcp.asking)
        stop_handled=stop_handled,
    )
