"""LangGraph: the documented tool-calling graph (model node + ToolNode, tools_condition) with a SQLite
checkpointer and a thread id, streamed the way a chat UI streams it, and four stop buttons. The model node is
LangChain's chat model for the trial's provider (ChatOpenAI, ChatAnthropic, ChatGoogleGenerativeAI).

- cancel:     cancel the asyncio task that runs `graph.astream(...)`.
- drain:      `RunControl.request_drain()` (langgraph.runtime), passed as `astream(..., control=...)`;
              the run ends with `GraphDrained` at the next superstep boundary.
- breakpoint: the graph is compiled with `interrupt_before=["tools"]`; like a UI, the adapter resumes
              with `astream(None, config)` at each breakpoint until stop is pressed, then it does not.
- break_sync: a sync web handler: `for chunk in graph.stream(...)` in a worker thread, left with
              `break` when the stop flag is set (checked between chunks).
Resume: `astream(None, config)` from the AsyncSqliteSaver (sync `stream(None, config)` from the
SqliteSaver for break_sync), in breakpoint mode resumed again at every breakpoint, until the graph ends;
the input again if the stop came before the thread's first checkpoint.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.contract.kit import KitAdapter, in_own_thread, warm

MODEL_NODE, TOOL_NODE = "agent", "tools"
STREAM_MODE = ["messages", "updates"]  # tokens for the UI, node updates for progress


class LangGraphAdapter(KitAdapter):
    cancel_on_close = False  # checkpointers are opened per run, MCP sessions per tool call: close() holds nothing

    @classmethod
    def prepare(cls) -> None:
        import langchain_anthropic  # noqa: F401
        import langchain_google_genai  # noqa: F401
        import langchain_mcp_adapters.client  # noqa: F401
        import langchain_openai  # noqa: F401
        import langgraph.checkpoint.sqlite.aio  # noqa: F401
        import langgraph.graph  # noqa: F401
        import langgraph.prebuilt  # noqa: F401
        warm("openai.resources.chat.chat", "anthropic.resources.messages", "google.genai.models", "httpcore2",
             "jsonschema")

    # --- the graph, built the documented way ----------------------------------------------------------

    async def _tools(self) -> list:
        from langchain_core.tools import StructuredTool

        ctx = self.ctx
        if ctx.tool_style == "mcp":
            from langchain_mcp_adapters.client import MultiServerMCPClient

            client = MultiServerMCPClient({"world": {"transport": "stdio", **ctx.mcp.params()}})
            return await client.get_tools()  # a new MCP session (server process) for each tool call
        if ctx.tool_style == "sync":
            return [StructuredTool.from_function(func=fn) for fn in ctx.tools.values()]
        return [StructuredTool.from_function(coroutine=fn) for fn in ctx.tools.values()]

    def _chat_model(self) -> Any:
        """The trial's provider through LangChain's own chat model for it (langchain-openai, langchain-anthropic,
        langchain-google-genai), given the world's base URL and the key, streamed, each at its defaults."""
        if self.ctx.provider == "anthropic":
            from langchain_anthropic import ChatAnthropic as chat_model
        elif self.ctx.provider == "gemini":
            from langchain_google_genai import ChatGoogleGenerativeAI as chat_model
        else:
            from langchain_openai import ChatOpenAI as chat_model
        return self.model_client(chat_model, model=self.ctx.model_name, streaming=True)

    def _graph(self, checkpointer: Any, sync: bool):
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        llm = self._chat_model().bind_tools(self.tools)

        if sync:
            def agent(state: MessagesState) -> dict:
                return {"messages": [llm.invoke(state["messages"])]}
        else:
            async def agent(state: MessagesState) -> dict:
                return {"messages": [await llm.ainvoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node(MODEL_NODE, agent)
        builder.add_node(TOOL_NODE, ToolNode(self.tools))
        builder.add_edge(START, MODEL_NODE)
        builder.add_conditional_edges(MODEL_NODE, tools_condition)
        builder.add_edge(TOOL_NODE, MODEL_NODE)
        interrupt_before = [TOOL_NODE] if self.mode == "breakpoint" else None
        return builder.compile(checkpointer=checkpointer, interrupt_before=interrupt_before)

    # --- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        ctx = self.ctx
        self.db = str(ctx.workdir / "langgraph-checkpoints.sqlite")
        self.config = {"configurable": {"thread_id": ctx.run_id}}
        self.tools = await self._tools()
        self.inputs = {"messages": [("system", ctx.system_prompt), ("user", ctx.prompt)]}
        self.job = self._begin(self.inputs)

    def _begin(self, inputs: Any) -> asyncio.Future:
        if self.mode == "break_sync":
            return in_own_thread(self._sync_handler, inputs, name="langgraph-sync-handler")
        self.control = None
        if self.mode == "drain":  # langgraph.runtime.RunControl came in 1.2.0 (framework.toml [modes_since])
            from langgraph.runtime import RunControl

            self.control = RunControl()  # a fresh control per run
        return asyncio.create_task(self._run(inputs))

    async def _run(self, inputs: Any) -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        # GraphDrained came with RunControl (langgraph 1.2.0); without drain there is none to catch
        drained: tuple[type[BaseException], ...] = ()
        if self.control is not None:
            from langgraph.errors import GraphDrained

            drained = (GraphDrained,)
        async with AsyncSqliteSaver.from_conn_string(self.db) as saver:
            graph = self._graph(saver, sync=False)
            if inputs is None and (await graph.aget_state(self.config)).created_at is None:
                inputs = self.inputs  # stopped before the first checkpoint: nothing to resume, send the input again
            kwargs = {"control": self.control} if self.control is not None else {}
            try:
                async for _ in graph.astream(inputs, self.config, stream_mode=STREAM_MODE, **kwargs):
                    pass
                # the UI resumes at each breakpoint for as long as the user has not pressed stop
                while (self.mode == "breakpoint" and not self.stop_pressed.is_set()
                       and (await graph.aget_state(self.config)).next):
                    async for _ in graph.astream(None, self.config, stream_mode=STREAM_MODE):
                        pass
            except drained:
                pass  # the documented end of a drained run: its checkpoint is saved

    def _sync_handler(self, inputs: Any) -> None:
        """What a sync web handler does: stream the graph and leave the loop when the user presses stop."""
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(self.db) as saver:
            graph = self._graph(saver, sync=True)
            if inputs is None and graph.get_state(self.config).created_at is None:
                inputs = self.inputs  # stopped before the first checkpoint: nothing to resume, send the input again
            for _ in graph.stream(inputs, self.config, stream_mode=STREAM_MODE):
                if self.stop_pressed.is_set():
                    break

    # --- the stop buttons: each returns when the run call has returned (LangGraph says it has stopped) ---

    stop_cancel = KitAdapter.stop_task_cancel

    async def stop_drain(self) -> None:
        self.control.request_drain("user pressed stop")
        await self.until_done()

    # breakpoint: not resumed at the next breakpoint; break_sync: the loop breaks at the next chunk
    stop_breakpoint = stop_break_sync = KitAdapter.flag_and_wait

    async def resume(self) -> None:
        self.stop_pressed.clear()  # before the sync handler's thread starts
        self.job = self._begin(None)
        await self.job


ADAPTER = LangGraphAdapter
