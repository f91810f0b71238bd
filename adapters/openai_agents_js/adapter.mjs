// openai-agents-js: the OpenAI Agents SDK for TypeScript (@openai/agents), its stop buttons pressed the way its docs
// show (docs: guides/running-agents "signal", guides/streaming "Stop a stream and continue the same turn",
// guides/human-in-the-loop), as a process speaking stopbench's adapter protocol (docs/adapter-protocol.md).
//
// - The model: OpenAIChatCompletionsModel on an `openai` client pointed at the world's base URL (key "x"; the
//   client's retries, back-off and timeouts as they come).
// - Tools: the scenario's tools from stopbench-tools, each wrapped with the SDK's `tool()`; the SDK's
//   ToolCallDetails.signal (the run's cancellation, since @openai/agents 0.14) is passed to the tool's request.
//   MCP: MCPServerStdio against the world's MCP server, connected at start, closed at close.
// - Every run keeps its history in a MemorySession (the SDK's local session) that lives as long as the app.
// - Resume: a cancelled stream resumes its unfinished turn from its RunState (`stream.state`), with the same
//   session, as guides/streaming says (RunState.fromString refuses that state once a session has written it: README);
//   a non-streamed run that was aborted leaves no result, so it (and the declined approval) goes on through the
//   session with the next input.
import "./telemetry-off.mjs"; // first: before the SDK is loaded
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { installedVersion, serve } from "stopbench-tools/protocol";
import { Toolbox } from "stopbench-tools";
import {
  Agent, getGlobalTraceProvider, MCPServerStdio, MemorySession, OpenAIChatCompletionsModel, RunState, run,
  setTracingDisabled, tool,
} from "@openai/agents";
import OpenAI from "openai";

const STREAMED = new Set(["abort_stream", "reader_cancel", "break"]);
const STATE_FILE = "openai-agents-js-state.json";

setTracingDisabled(true);
// Importing @openai/agents installs the OpenAI trace exporter's BatchTraceProcessor, whose export loop re-arms a
// 5 s timer for the life of the process even with tracing disabled (agents-core tracing/processor.mjs): a poller
// that would hold every trial open. The trace provider's public shutdown() ends that loop; no trace is ever sent.
await getGlobalTraceProvider().shutdown();

class OpenAIAgentsJs {
  /** The stop buttons of framework.toml's [stop_modes] (a `+state` mode presses its button; only its resume
   * differs): each returns when the SDK says the run has stopped. */
  stops = {
    abort: () => this.abort(),
    abort_stream: () => this.abort(),
    "abort_stream+state": () => this.abort(),
    reader_cancel: () => this.cancelReader(),
    break: () => this.leaveLoop(),
    approval: () => this.decline(),
    "approval+state": () => this.decline(),
  };

  /** How the job ended: an AbortError (the SDK's own, or fetch's) or the openai client's APIUserAbortError. */
  isCancel = (error) => error?.name === "AbortError" || error?.constructor?.name === "APIUserAbortError";

  async start(ctx) {
    this.ctx = ctx;
    this.button = ctx.mode.split("+")[0]; // the job runs as its button needs; `+state` changes only resume
    this.fromString = ctx.mode.endsWith("+state");
    this.saved = null; // approval+state: the declined pause's RunState.toString()
    this.pressed = false; // break / approval: the user pressed stop, seen at the next event / approval
    this.declined = null; // approval: resolves when a pending approval was rejected
    this.stream = null; // the StreamedRunResult of a streamed job
    this.client = new OpenAI({ baseURL: ctx.model_base_url, apiKey: "x" });
    this.session = new MemorySession({ sessionId: ctx.run_id });
    this.mcp = null;
    if (ctx.tool_style === "mcp") {
      this.mcp = new MCPServerStdio({ name: "world", command: ctx.mcp.command, args: ctx.mcp.args, env: ctx.mcp.env });
      await this.mcp.connect();
    }
    this.agent = this.buildAgent();
    this.launch(ctx.prompt);
  }

  buildAgent() {
    const toolbox = new Toolbox(this.ctx);
    const gated = this.button === "approval";
    const tools = this.ctx.tool_style === "mcp" ? [] : this.ctx.tools.map((spec) => tool({
      name: spec.name,
      description: spec.description,
      parameters: spec.parameters,
      strict: true,
      needsApproval: gated && spec.effect_kind !== null,
      execute: (input, _runContext, details) => toolbox.call(spec.name, input, { signal: details?.signal }),
    }));
    return new Agent({
      name: "assistant",
      instructions: this.ctx.system_prompt,
      model: new OpenAIChatCompletionsModel(this.client, this.ctx.model_name),
      tools,
      mcpServers: this.mcp ? [this.mcp] : [],
    });
  }

  /** Start the job for `input` (the prompt, the next user input, or a RunState) the way the trial's button needs. */
  launch(input) {
    this.controller = new AbortController();
    this.reader = null;
    this.readerMade = new Promise((resolve) => { this.readerReady = resolve; });
    if (STREAMED.has(this.button)) this.job = this.streamed(input);
    else if (this.button === "approval") this.job = this.approvalLoop(input);
    else this.job = run(this.agent, input, { session: this.session, signal: this.controller.signal });
    this.job.catch(() => {}); // `wait` reads how it ended
  }

  async streamed(input) {
    const stream = await run(this.agent, input, { stream: true, session: this.session, signal: this.controller.signal });
    this.stream = stream;
    if (this.button === "reader_cancel") {
      this.reader = stream.toStream().getReader();
      this.readerReady();
      while (!(await this.reader.read()).done);
    } else {
      for await (const _event of stream) {
        if (this.pressed) break; // `break` only: the other modes never set it
      }
    }
    if (this.button !== "break") await stream.completed; // guides/streaming: await it before the run is settled
  }

  async approvalLoop(input) {
    let result = await run(this.agent, input, { session: this.session });
    while (result.interruptions.length) {
      const decline = this.pressed;
      if (decline && this.fromString && this.saved === null) this.saved = result.state.toString(); // before reject
      for (const item of result.interruptions) decline ? result.state.reject(item) : result.state.approve(item);
      if (decline) this.declined?.();
      result = await run(this.agent, result.state, { session: this.session });
    }
    if (this.fromString && this.saved === null) this.saved = result.state.toString(); // no approval was declined
  }

  /** abort, abort_stream: the signal given to run(); stopped when the run has settled. */
  async abort() {
    this.controller.abort();
    await this.job.catch(() => {});
  }

  /** reader_cancel: run(..., { stream: true }) may not have returned the stream yet: the reader is cancelled as
   * soon as it is made; stopped when the run has settled. */
  async cancelReader() {
    await Promise.race([this.readerMade, this.job.catch(() => {})]);
    await this.reader?.cancel();
    await this.job.catch(() => {});
  }

  /** break: the loop over the stream's events is left at the next event. */
  async leaveLoop() {
    this.pressed = true;
    await this.job.catch(() => {});
  }

  /** approval: the pending approval is rejected, and no further one given; stopped once it was rejected. */
  async decline() {
    const declined = new Promise((resolve) => { this.declined = resolve; });
    this.pressed = true;
    await Promise.race([declined, this.job.catch(() => {})]);
  }

  async resume(nextInput) {
    this.pressed = false;
    this.declined = null;
    if (STREAMED.has(this.button)) {
      if (!this.stream) throw new Error("the stopped job left no stream to take a RunState from");
      await this.stream.completed.catch(() => {}); // settled before its state is read (guides/streaming)
      this.launch(this.fromString ? await this.restored(this.stream.state.toString()) : this.stream.state);
    } else if (this.fromString) {
      if (this.saved === null) throw new Error("the stopped job left no RunState");
      const state = await this.restored(this.saved);
      for (const item of state.getInterruptions()) state.approve(item); // the user now approves what was pending
      this.launch(state);
    } else {
      this.launch(nextInput);
    }
    await this.job;
  }

  /** The RunState an app kept as a string (in a file, a database) between the stop and the resume, read back. */
  async restored(text) {
    const file = path.join(this.ctx.workdir, STATE_FILE);
    writeFileSync(file, text);
    return RunState.fromString(this.agent, readFileSync(file, "utf8"));
  }

  async close() {
    this.controller?.abort();
    await this.job?.catch(() => {});
    await this.mcp?.close();
    this.mcp = null;
  }

  versions() {
    const at = import.meta.url;
    return {
      node: process.versions.node,
      ...Object.fromEntries(["@openai/agents", "@openai/agents-core", "@openai/agents-openai", "openai",
        "@modelcontextprotocol/client"].map((name) => [name, installedVersion(name, at)])),
    };
  }
}

serve(new OpenAIAgentsJs());
