"""Microsoft Agent Framework workflows: the same agent as the only participant of a sequential workflow, checkpointed.

The workflow is the docs' sequential orchestration (agent_framework.orchestrations.SequentialBuilder, samples/
03-workflows/orchestrations) with a `FileCheckpointStorage` in the trial folder (samples/03-workflows/checkpoint/
checkpoint_with_resume.py). Its stops: cancel the task awaiting `workflow.run(...)` (samples/03-workflows/
control-flow/workflow_cancellation.py), leave the event stream (checkpoint_with_resume.py "Simulating workflow
interruption"), and the human-in-the-loop pause: side-effect tools need approval, the application answers each
`request_info` event (samples/03-workflows/human-in-the-loop/agents_with_approval_requests.py) until the user
presses stop, and then leaves it unanswered. Resume restores the latest checkpoint into a freshly built workflow.

Run it with `stopbench run --adapter adapters.agent_framework.workflow:AgentFrameworkWorkflowAdapter`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.agent_framework.adapter import AgentFrameworkAdapter
from harness.contract.kit import KitAdapter


class AgentFrameworkWorkflowAdapter(AgentFrameworkAdapter):
    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        from agent_framework import FileCheckpointStorage  # noqa: F401 (loaded lazily otherwise)
        from agent_framework.orchestrations import SequentialBuilder  # noqa: F401

    async def start(self) -> None:
        from agent_framework import FileCheckpointStorage

        self.storage = FileCheckpointStorage(self.ctx.workdir / "checkpoints")
        self.agent = self._agent(approval=self.mode == "pause")
        await self._open_mcp()
        self.workflow = self._workflow()
        self.job = self._run(message=self.ctx.prompt)

    def _workflow(self) -> Any:
        from agent_framework.orchestrations import SequentialBuilder

        return SequentialBuilder(participants=[self.agent], checkpoint_storage=self.storage).build()

    def _run(self, **run: Any) -> asyncio.Task:
        if self.mode == "break":
            return asyncio.create_task(self._consume_events(**run))
        return asyncio.create_task(self._answer_requests(**run))

    async def _consume_events(self, **run: Any) -> None:
        """The application's loop over the workflow's event stream."""
        async for _event in self.workflow.run(stream=True, **run):
            if self.stop_pressed.is_set():
                break

    async def _answer_requests(self, **run: Any) -> None:
        """Run the workflow, approving each tool approval it asks for, until stop: then the request stays pending."""
        result = await self.workflow.run(**run)
        while requests := result.get_request_info_events():
            if self.stop_pressed.is_set():
                return  # the workflow is idle with pending requests: paused
            result = await self.workflow.run(responses={
                event.request_id: event.data.to_function_approval_response(approved=True) for event in requests})

    # --- the stop buttons: each returns when the application's call to the workflow has returned or raised ---

    # task_cancel: KitAdapter's; break: the loop leaves at its next event; pause: the next approval is left unanswered
    stop_break = stop_pause = KitAdapter.flag_and_wait

    async def resume(self) -> None:
        self.stop_pressed.clear()
        latest = await self.storage.get_latest(workflow_name=self.workflow.name)
        if latest is None:
            raise RuntimeError("the stopped workflow left no checkpoint")
        self.workflow = self._workflow()  # as after a restart: the checkpoint restores a new instance
        self.job = self._run(checkpoint_id=latest.checkpoint_id)
        await self.job
