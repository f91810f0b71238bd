// mastra: an @mastra/core Agent (and a Workflow around it) stopped with Mastra's own buttons, as a Mastra app's
// stop button presses them. The model is the world's OpenAI-compatible API through the AI SDK's OpenAI provider
// (`@ai-sdk/openai`, Chat Completions); the tools are the scenario's (stopbench-tools) wrapped with `createTool`, or
// the world's MCP server through `@mastra/mcp`'s MCPClient. The Agent is registered on a Mastra instance with an
// in-memory store, which holds its memory thread (the conversation: how an agent run is continued) and the
// workflow's and the suspended runs' snapshots.
//
// Stop modes (docs: mastra.ai/reference/agents/generate, /reference/workflows/run-methods/cancel,
// /docs/agents/human-in-the-loop):
// - stream_abort:   agent.stream(prompt, { abortSignal }) read through its fullStream; AbortController.abort()
// - generate_abort: agent.generate(prompt, { abortSignal }); AbortController.abort()
// - workflow_cancel: a workflow whose step runs agent.stream with the step's abortSignal; run.cancel()
// - approval:       agent.stream(prompt, { requireToolApproval: true }); every call is approved with
//                   agent.approveToolCall({ runId }) until stop is pressed, then the next one is not: the run stays
//                   suspended with its snapshot, and resume approves it from that snapshot.
import { installedVersion, serve } from "stopbench-tools/protocol";
import { Toolbox } from "stopbench-tools";

// the documented opt-out of Mastra's usage telemetry (PostHog), before Mastra is loaded
process.env.MASTRA_TELEMETRY_DISABLED = "1";

const { createOpenAI } = await import("@ai-sdk/openai");
const { Agent } = await import("@mastra/core/agent");
const { Mastra } = await import("@mastra/core/mastra");
const { InMemoryStore } = await import("@mastra/core/storage");
const { createTool } = await import("@mastra/core/tools");
const { createStep, createWorkflow } = await import("@mastra/core/workflows");
const { MCPClient } = await import("@mastra/mcp");
const { Memory } = await import("@mastra/memory");
const { z } = await import("zod");

/** How many model turns a run may take: the scenarios' longest job has six (Mastra's default is five). */
const MAX_STEPS = 20;
const AGENT_ID = "stopbench-agent";
const STEP_ID = "agent-turns";

class Stopped extends Error {
  name = "AbortError";
}

class MastraAdapter {
  /** The stop buttons of framework.toml's [stop_modes]: each returns when Mastra says the run has stopped (the
   * stream has ended, generate() settled, cancel() resolved, the run is suspended). */
  stops = {
    stream_abort: () => this.abortAndWait(),
    generate_abort: () => this.abortAndWait(),
    workflow_cancel: async () => {
      this.stopPressed = true;
      await (await this.runReady())?.cancel();
    },
    approval: async () => {
      this.stopPressed = true; // the next call waiting for approval is not approved
      await this.job.catch(() => {});
    },
  };

  async start(ctx) {
    this.ctx = ctx;
    this.mode = ctx.mode;
    this.memory = { thread: `thread-${ctx.run_id}`, resource: "stopbench-user" };
    this.mcp = null;
    const tools = ctx.tool_style === "mcp" ? await this.mcpTools() : this.ownTools();
    const provider = createOpenAI({ baseURL: ctx.model_base_url, apiKey: "x" });
    this.agent = new Agent({
      id: AGENT_ID,
      name: "stopbench agent",
      instructions: ctx.system_prompt,
      model: provider.chat(ctx.model_name),
      tools,
      memory: new Memory(),
    });
    const agent = this.agent;
    const memory = this.memory;
    const turns = createStep({
      id: STEP_ID,
      inputSchema: z.object({ prompt: z.string() }),
      outputSchema: z.object({ text: z.string() }),
      execute: async ({ inputData, abortSignal }) => {
        const output = await agent.stream(inputData.prompt, { abortSignal, memory, maxSteps: MAX_STEPS });
        return { text: await drain(output) };
      },
    });
    this.workflow = createWorkflow({
      id: "stopbench-workflow",
      inputSchema: z.object({ prompt: z.string() }),
      outputSchema: z.object({ text: z.string() }),
    }).then(turns).commit();
    this.mastra = new Mastra({
      agents: { [AGENT_ID]: this.agent },
      workflows: { "stopbench-workflow": this.workflow },
      storage: new InMemoryStore(),
    });
    this.stopPressed = false;
    this.waiting = []; // approval: the tool calls waiting for approval, oldest first
    this.job = this.launch(ctx.prompt);
    this.job.catch(() => {}); // `wait` reads how it ended
  }

  /** The scenario's tools as Mastra tools: the run's abort signal reaches each call (its connection is closed). */
  ownTools() {
    const toolbox = new Toolbox(this.ctx);
    const tools = {};
    for (const spec of this.ctx.tools) {
      const shape = Object.fromEntries(Object.entries(spec.parameters.properties)
        .map(([name, p]) => [name, z.string().describe(p.description ?? name)]));
      tools[spec.name] = createTool({
        id: spec.name,
        description: spec.description,
        inputSchema: z.object(shape),
        execute: async (input, context) => toolbox.call(spec.name, input, { signal: context?.abortSignal }),
      });
    }
    return tools;
  }

  /** The world's MCP server's tools through MCPClient (stdio), by their own names, as the model calls them. */
  async mcpTools() {
    const { command, args, env } = this.ctx.mcp;
    this.mcp = new MCPClient({ id: `stopbench-${this.ctx.run_id}`, servers: { world: { command, args, env } } });
    const toolsets = await this.mcp.listToolsets();
    return toolsets.world;
  }

  launch(prompt) {
    this.controller = new AbortController();
    const options = { abortSignal: this.controller.signal, memory: this.memory, maxSteps: MAX_STEPS };
    if (this.mode === "generate_abort") return this.agent.generate(prompt, options).then(ended(this.controller.signal));
    if (this.mode === "workflow_cancel") return this.runWorkflow((run) => run.start({ inputData: { prompt } }));
    if (this.mode === "approval") {
      // as the human-in-the-loop docs run it: no memory thread (a suspended run on a thread renews the thread's
      // lease every 5 s for as long as it stays suspended); the suspended run's snapshot is what resumes it
      const { memory: _, ...approval } = options;
      return this.approveUntilStop(this.agent.stream(prompt, { ...approval, requireToolApproval: true }));
    }
    return this.agent.stream(prompt, options).then(drain).then(ended(this.controller.signal));
  }

  async runWorkflow(go) {
    this.run ??= await this.workflow.createRun();
    const result = await go(this.run);
    if (result.status === "success") return result.result;
    if (result.status === "canceled") throw new Stopped(`workflow run ${result.status}`);
    throw new Error(`workflow run ${result.status}: ${result.error?.message ?? JSON.stringify(result.error ?? null)}`);
  }

  /**
   * Read each stream to its end, then approve the oldest call still waiting (agent.approveToolCall with its
   * toolCallId) and read the stream that returns, until none waits; once stop is pressed, none is approved: the run
   * stays suspended, its snapshot in the store. (Approving a call as its chunk arrives, before the stream has ended,
   * fails: the run is not suspended yet. Calls asked for together are approved one by one: the stream of one
   * approval brings the approval chunks of the others.)
   */
  async approveUntilStop(streaming) {
    let output = await streaming;
    for (;;) {
      for await (const chunk of output.fullStream) {
        if (chunk.type === "error") throw chunk.payload?.error ?? new Error("stream error");
        if (chunk.type === "tool-call-approval") {
          this.waiting.push({ runId: output.runId, toolCallId: chunk.payload.toolCallId, toolName: chunk.payload.toolName });
        }
      }
      if (!this.waiting.length) return;
      if (this.stopPressed) {
        throw new Stopped(`suspended before ${this.waiting.map((c) => c.toolName).join(", ")}: not approved`);
      }
      output = await this.approve();
    }
  }

  approve() {
    const { runId, toolCallId } = this.waiting.shift();
    return this.agent.approveToolCall({ runId, toolCallId });
  }

  async abortAndWait() {
    this.stopPressed = true;
    this.controller.abort();
    await this.job.catch(() => {});
  }

  async runReady() {
    while (!this.run) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    return this.run;
  }

  async resume(nextInput) {
    this.stopPressed = false;
    if (this.mode === "workflow_cancel") {
      // the cancelled Run's abort signal stays aborted: the run is taken again by its id, from storage
      this.run = await this.workflow.createRun({ runId: this.run.runId });
      this.job = this.runWorkflow((run) => run.timeTravel({ step: STEP_ID }));
    } else if (this.mode === "approval") {
      // the calls left unapproved at the stop, approved from the suspended run's snapshot, and every later one
      if (!this.waiting.length) return; // the run ended whole before another call came: nothing to continue
      this.job = this.approveUntilStop(this.approve());
    } else {
      this.job = this.launch(nextInput);
    }
    await this.job;
  }

  async close() {
    this.controller?.abort();
    await this.job?.catch(() => {});
    const mcp = this.mcp;
    this.mcp = null;
    await mcp?.disconnect();
  }

  versions() {
    const of = (name) => installedVersion(name, import.meta.url);
    return {
      node: process.versions.node,
      "@mastra/core": of("@mastra/core"),
      "@mastra/mcp": of("@mastra/mcp"),
      "@mastra/memory": of("@mastra/memory"),
      "@ai-sdk/openai": of("@ai-sdk/openai"),
    };
  }
}

/** Read a Mastra stream to its end; resolves to its text. An error chunk is raised. */
async function drain(output) {
  for await (const chunk of output.fullStream) {
    if (chunk.type === "error") throw chunk.payload?.error ?? new Error("stream error");
  }
  return output.text;
}

/** After a run's promise: a run that ended because its signal was aborted ended by the stop. */
function ended(signal) {
  return (value) => {
    if (signal.aborted) throw new Stopped("the run's abortSignal was aborted");
    return value;
  };
}

serve(new MastraAdapter());
