// The world's MCP stdio server through the official TypeScript SDK's client (@modelcontextprotocol/sdk):
// StdioClientTransport with the command, arguments and environment the harness gives in `start` (`mcp`), as a
// JavaScript app starts an MCP server. Its calls take an AbortSignal (the SDK's RequestOptions.signal).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StopPressed } from "./tools.mjs";

/** An initialized MCP client session; close it with `client.close()` (the server process ends with it). */
export async function openMcp(ctx) {
  const transport = new StdioClientTransport({
    command: ctx.mcp.command,
    args: ctx.mcp.args,
    env: ctx.mcp.env, // the SDK adds its default environment (PATH, HOME...), as the Python SDK does
    stderr: "inherit",
  });
  const client = new Client({ name: "stopbench-js", version: "0.1.0" });
  await client.connect(transport);
  return client;
}

/** Call a tool; resolves to its text. A call the server did not send because stop was pressed (the reference's
 * server asks the trial's stop button) throws StopPressed; any other tool error throws. */
export async function callTool(client, name, args, { signal, notSent } = {}) {
  const result = await client.callTool({ name, arguments: args }, undefined, signal ? { signal } : undefined);
  const text = (result.content ?? []).map((c) => c.text ?? "").join("");
  if (result.isError) {
    if (notSent && text === notSent) throw new StopPressed(`${name}: ${text}`);
    throw new Error(`MCP tool ${name} failed: ${text}`);
  }
  return text;
}
