// vercel-ai: the Vercel AI SDK (`ai`) as its docs tell a Node app to run an agent: `streamText` / `generateText`
// with tools and `stopWhen: isStepCount(20)` (the multi-step loop; the SDK's own default is one step), the model
// through `@ai-sdk/openai-compatible` pointed at the world's Chat Completions, MCP through `@ai-sdk/mcp`'s
// `createMCPClient` with its stdio transport. Every stop button the docs give a user:
// - `abort`: `streamText({ abortSignal })`, `controller.abort()`; the tools get the same signal (their execute's
//   `{ abortSignal }`); stopped when the stream the UI reads has ended (docs: "Stopping Streams");
// - `generate_abort`: the same signal on `generateText`; stopped when its promise has settled;
// - `break`: leave the `for await (const part of result.stream)` loop at its next part (no signal);
// - `reader_cancel`: `reader.cancel()` on the reader of `result.textStream` (no signal), stopped when it resolves;
// - `stop_when`: a stop condition in `stopWhen` that is true once the user pressed stop: the loop ends after the
//   step under way (its tool calls included); stopped when the run has ended.
// Resume, as the docs keep a chat going: call again with the messages so far (the prompt, then `response.messages`
// of every step that finished before the stop) and the user's next message.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createMCPClient } from "@ai-sdk/mcp";
import { StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import { generateText, isStepCount, jsonSchema, streamText, tool } from "ai";
import { Toolbox } from "stopbench-tools";
import { installedVersion, serve } from "stopbench-tools/protocol";

const MAX_STEPS = 20; // ToolLoopAgent's default step limit (docs: "Loop Control")

const PACKAGES = ["ai", "@ai-sdk/openai-compatible", "@ai-sdk/mcp", "@ai-sdk/provider-utils", "@ai-sdk/provider"];

/** The consumer left the stream or the loop stopped early because the user pressed stop. */
class StoppedByUser extends Error {
  name = "StoppedByUser";
}

class VercelAi {
  /** The stop buttons of framework.toml's [stop_modes]: each returns when the SDK says the run has stopped. */
  stops = {
    abort: () => this.press(() => this.controller.abort()),
    generate_abort: () => this.press(() => this.controller.abort()),
    break: () => this.press(),
    reader_cancel: async () => {
      this.pressed = true;
      await this.reader?.cancel();
    },
    stop_when: () => this.press(),
  };

  isCancel = (error) => error?.name === "AbortError" || error instanceof StoppedByUser;

  async start(ctx) {
    this.ctx = ctx;
    this.mode = ctx.mode;
    this.model = createOpenAICompatible({ name: "world", baseURL: ctx.model_base_url, apiKey: "x" })
      .chatModel(ctx.model_name);
    this.mcp = null;
    if (ctx.tool_style === "mcp") {
      this.mcp = await createMCPClient({
        transport: new StdioMCPTransport({ command: ctx.mcp.command, args: ctx.mcp.args, env: ctx.mcp.env, stderr: "inherit" }),
      });
      this.tools = await this.mcp.tools();
    } else {
      this.tools = this.kitTools(new Toolbox(ctx));
    }
    this.messages = [{ role: "user", content: ctx.prompt }];
    this.launch();
  }

  /** The kit's tools as the SDK's `tool()`s: JSON Schema input, the SDK's abort signal passed on. */
  kitTools(toolbox) {
    return Object.fromEntries(this.ctx.tools.map((spec) => [spec.name, tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.parameters),
      execute: (args, { abortSignal }) => toolbox.call(spec.name, args, { signal: abortSignal }),
    })]));
  }

  launch() {
    this.pressed = false;
    this.controller = new AbortController();
    this.reader = null;
    this.job = this.mode === "generate_abort" ? this.generate() : this.stream();
    this.job.catch(() => {}); // `wait` reads how it ended
  }

  /** What every call shares; `onStepEnd` appends each finished step's response.messages (that step's assistant
   * and tool messages only) to the messages so far, for resume. */
  options() {
    const signal = this.mode === "abort" || this.mode === "generate_abort" ? this.controller.signal : undefined;
    return {
      model: this.model,
      instructions: this.ctx.system_prompt,
      messages: this.messages.slice(),
      tools: this.tools,
      stopWhen: this.mode === "stop_when" ? [isStepCount(MAX_STEPS), () => this.pressed] : isStepCount(MAX_STEPS),
      abortSignal: signal,
      telemetry: { isEnabled: false },
      onStepEnd: (step) => {
        this.messages.push(...step.response.messages);
      },
    };
  }

  async generate() {
    await generateText(this.options());
  }

  async stream() {
    const result = streamText(this.options());
    let last = null;
    if (this.mode === "reader_cancel") {
      this.reader = result.textStream.getReader();
      for (;;) {
        const { done } = await this.reader.read();
        if (done) break;
      }
      if (this.pressed) throw new StoppedByUser("the consumer cancelled its reader of result.textStream");
      return;
    }
    for await (const part of result.stream) {
      last = part;
      if (part.type === "error") throw part.error;
      if (this.mode === "break" && this.pressed) throw new StoppedByUser("the consumer left the stream");
    }
    if (last?.type === "abort") throw Object.assign(new Error("streamText ended with an abort part"), { name: "AbortError" });
    if (this.mode === "stop_when" && this.pressed && last?.type === "finish" && last.finishReason === "tool-calls") {
      throw new StoppedByUser("stopWhen ended the loop after the step under way");
    }
  }

  /** The user pressed stop: the button's call (none for `break` and `stop_when`: the loop sees `pressed`), then
   * the run has ended. */
  async press(button = () => {}) {
    this.pressed = true;
    button();
    await this.job.catch(() => {});
  }

  async resume(nextInput) {
    this.messages = [...this.messages, { role: "user", content: nextInput }];
    this.launch();
    await this.job;
  }

  async close() {
    if (this.job && !this.pressed) {
      this.controller.abort();
      await this.job.catch(() => {});
    }
    const mcp = this.mcp;
    this.mcp = null;
    await mcp?.close();
  }

  versions() {
    return {
      node: process.versions.node,
      ...Object.fromEntries(PACKAGES.map((name) => [name, installedVersion(name, import.meta.url)])),
    };
  }
}

serve(new VercelAi());
