// What the CLI commands touch outside themselves, passed in so tests run them in-process.
import type { Env } from "../config/config-error.ts";
import type { WebSocketConstructor } from "../link/session.ts";

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: Env;
  fetch: typeof fetch;
  WebSocket: WebSocketConstructor;
}
