#!/usr/bin/env node
// Entry point of `berth-agent <command>`.
import WebSocket from "ws";
import { main } from "./cli/main.ts";

// No top-level await: Node's single-executable build, where this is headed, runs CommonJS.
void main(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  fetch: globalThis.fetch,
  WebSocket,
}).then(
  // Exit explicitly: a Docker or HTTP keep-alive socket must not hold a finished command open.
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`berth-agent: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
