// langgraph-js: LangGraph.js as its docs build a tool-calling agent, beside the Python adapter (adapters/langgraph):
// a model node (@langchain/openai ChatOpenAI on the world's model API, streaming, bound to the tools), a ToolNode,
// toolsCondition between them, a MemorySaver checkpointer and a thread id (the run id). The run is streamed as a
// chat UI streams it: graph.stream(input, {streamMode: ["messages", "updates"]}), consumed with `for await`.
//
// Stop buttons, each answered when the run's stream loop has ended (LangGraph.js says the run is over):
// - abort_signal:  AbortController.abort() on the controller whose signal was passed as config.signal;
// - stream_cancel: stream.cancel() on the stream graph.stream() returned (IterableReadableStreamWithAbortSignal);
// - drain:         RunControl.requestDrain() on the control passed as config.control; the run ends with GraphDrained
//                  at the next superstep boundary;
// - breakpoint:    compiled with interruptBefore: ["tools"]; the app resumes with stream(null, config) at each
//                  breakpoint until stop is pressed, then it does not;
// - sigterm:       SIGTERM to the app: its handler calls RunControl.requestDrain("sigterm"), the use RunControl's
//                  documentation names; the app lives on.
// Resume: stream(null, config) from the MemorySaver, at each breakpoint again until the graph ends; the input again
// when the stop came before the thread's first checkpoint.
process.env.LANGSMITH_TRACING ??= "false"; // the documented opt-outs (also in framework.toml [environment])
process.env.LANGCHAIN_TRACING_V2 ??= "false";

const { installedVersion, serve } = await import("stopbench-tools/protocol"); // first: stdout is the protocol's
const { tool } = await import("@langchain/core/tools");
const { GraphDrained, MemorySaver, MessagesAnnotation, RunControl, START, StateGraph } = await import("@langchain/langgraph");
const { ToolNode, toolsCondition } = await import("@langchain/langgraph/prebuilt");
const { MultiServerMCPClient } = await import("@langchain/mcp-adapters");
const { ChatOpenAI } = await import("@langchain/openai");
const { Toolbox } = await import("stopbench-tools");

const MODEL_NODE = "agent";
const TOOL_NODE = "tools";
const STREAM_MODE = ["messages", "updates"]; // tokens for the UI, node updates for progress
const API_KEY = "x";
const PACKAGES = ["@langchain/langgraph", "@langchain/langgraph-checkpoint", "@langchain/core", "@langchain/openai",
  "openai", "@langchain/mcp-adapters", "@modelcontextprotocol/sdk"];

const DRAINED_BY = new Set(["drain", "sigterm"]);

class LangGraphJs {
  /** The stop buttons of framework.toml's [stop_modes] (sigterm: its [stop_signals] entry; the kit installs the
   * handler): each returns when the run's stream loop has ended. */
  stops = {
    abort_signal: () => this.press(() => this.controller.abort()),
    stream_cancel: () => this.press(async () => (await this.streamOpened)?.cancel()),
    drain: () => this.press(() => this.control.requestDrain("user pressed stop")),
    breakpoint: () => this.press(), // the flag: the next breakpoint is not resumed
    sigterm: () => this.press(() => this.control.requestDrain("sigterm")),
  };

  // the run ended by the stop: an AbortError (abort_signal, stream_cancel) or LangGraph's GraphDrained
  isCancel = (error) => error?.name === "AbortError" || error instanceof GraphDrained || (this.stopPressed && isStreamCancelled(error));

  async start(ctx) {
    this.ctx = ctx;
    this.mode = ctx.mode;
    this.config = { configurable: { thread_id: ctx.run_id } };
    this.inputs = { messages: [["system", ctx.system_prompt], ["user", ctx.prompt]] };
    this.checkpointer = new MemorySaver();
    this.mcp = null;
    this.tools = await this.makeTools();
    this.graph = this.buildGraph();
    this.begin(this.inputs);
  }

  // --- the graph, built the documented way --------------------------------------------------------------

  async makeTools() {
    const ctx = this.ctx;
    if (ctx.tool_style === "mcp") {
      this.mcp = new MultiServerMCPClient({
        mcpServers: { world: { transport: "stdio", command: ctx.mcp.command, args: ctx.mcp.args, env: ctx.mcp.env } },
      });
      return await this.mcp.getTools();
    }
    const toolbox = new Toolbox(ctx);
    // the run's abort signal reaches a tool as config.signal: it closes the tool's request
    return ctx.tools.map((spec) => tool(
      (args, config) => toolbox.call(spec.name, args, { signal: config?.signal }),
      { name: spec.name, description: spec.description, schema: spec.parameters },
    ));
  }

  buildGraph() {
    const llm = new ChatOpenAI({
      model: this.ctx.model_name, apiKey: API_KEY, configuration: { baseURL: this.ctx.model_base_url }, streaming: true,
    }).bindTools(this.tools);
    const agent = async (state, config) => ({ messages: [await llm.invoke(state.messages, config)] });
    return new StateGraph(MessagesAnnotation)
      .addNode(MODEL_NODE, agent)
      .addNode(TOOL_NODE, new ToolNode(this.tools))
      .addEdge(START, MODEL_NODE)
      .addConditionalEdges(MODEL_NODE, toolsCondition)
      .addEdge(TOOL_NODE, MODEL_NODE)
      .compile({ checkpointer: this.checkpointer, interruptBefore: this.mode === "breakpoint" ? [TOOL_NODE] : undefined });
  }

  // --- a run --------------------------------------------------------------------------------------------

  begin(inputs) {
    this.stopPressed = false;
    this.controller = this.mode === "abort_signal" ? new AbortController() : null;
    this.control = DRAINED_BY.has(this.mode) ? new RunControl() : null; // a fresh control per run
    this.stream = null;
    let opened;
    this.streamOpened = new Promise((resolve) => { opened = resolve; });
    this.job = this.run(inputs, opened);
    this.job.catch(() => {}); // `wait` and `resume` read how it ended
  }

  options() {
    const options = { ...this.config, streamMode: STREAM_MODE };
    if (this.controller) options.signal = this.controller.signal;
    if (this.control) options.control = this.control;
    return options;
  }

  async run(inputs, opened) {
    try {
      if (inputs === null && (await this.graph.getState(this.config)).createdAt === undefined) {
        inputs = this.inputs; // stopped before the first checkpoint: nothing to resume, send the input again
      }
      await this.consume(inputs, opened);
      // the UI resumes at each breakpoint for as long as the user has not pressed stop
      while (this.mode === "breakpoint" && !this.stopPressed && (await this.graph.getState(this.config)).next.length) {
        await this.consume(null, opened);
      }
    } catch (error) {
      if (!(error instanceof GraphDrained)) throw error;
      // the documented end of a drained run: its checkpoint is saved
    } finally {
      opened(null);
    }
  }

  async consume(inputs, opened) {
    this.stream = await this.graph.stream(inputs, this.options());
    opened(this.stream);
    for await (const _ of this.stream) {
      // a chat UI renders the chunk here
    }
  }

  // --- the stop buttons: each returns when the run's stream loop has ended -------------------------------

  async press(button = () => {}) {
    this.stopPressed = true;
    await button();
    await this.job.catch(() => {});
  }

  async resume() {
    this.begin(null);
    await this.job;
  }

  async close() {
    const mcp = this.mcp;
    this.mcp = null;
    await mcp?.close();
  }

  versions() {
    const found = Object.fromEntries(PACKAGES.map((name) => [name, installedVersion(name, import.meta.url)]));
    return { node: process.versions.node, ...found };
  }
}

/** stream.cancel() releases the consumer's reader: its pending read rejects with this TypeError. */
function isStreamCancelled(error) {
  return error instanceof TypeError && /releas/i.test(String(error.message));
}

serve(new LangGraphJs());
