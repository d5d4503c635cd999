// The `logs.tail` command: the last N lines of an environment's ERP container, for support.
// Read-only, and no lock: it may run while an operation holds the environment. The
// container is found by Berth's labels (never by a name from the command), and the Docker
// client only reads logs of containers that carry `berth.managed=true`. The engine's
// multiplexed stdout/stderr stream is split by the Docker client (`containerLogs`).
//
// What is returned is capped so the `command.result` event stays well inside the agent's
// event batch (1 MiB) and the control plane's frame limit: at most MAX_LINES lines and
// MAX_BYTES of JSON text, the newest lines kept.
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { requireErpContainer } from "../environment/erp-container.ts";
import type { CommandHandler } from "../runner/handler-types.ts";

export const LOGS_TAIL_MAX_LINES = 10_000;
/** Bytes of the lines as JSON strings (escapes included), so the event's size is what is bounded. */
export const LOGS_TAIL_MAX_BYTES = 1024 * 1024;

export interface LogsTailDeps {
  stateDir: string;
}

export interface TailResult {
  lines: string[];
  truncated: boolean;
}

/** Splits `text` into lines and keeps the newest ones within `maxLines` and `maxBytes`. */
export function lastLines(text: string, maxLines: number, maxBytes = LOGS_TAIL_MAX_BYTES): TailResult {
  const all = text.split(/\r?\n/);
  // A trailing newline is the end of the last line, not an empty line after it.
  if (all.length > 0 && all[all.length - 1] === "") all.pop();
  const kept: string[] = [];
  let bytes = 0;
  let truncated = all.length > maxLines;
  for (let i = all.length - 1; i >= 0 && kept.length < maxLines; i--) {
    const line = all[i] ?? "";
    // +1 for the comma between array items.
    const size = Buffer.byteLength(JSON.stringify(line), "utf8") + 1;
    if (bytes + size > maxBytes) {
      truncated = true;
      break;
    }
    bytes += size;
    kept.push(line);
  }
  return { lines: kept.reverse(), truncated };
}

export function createLogsTailHandler(deps: LogsTailDeps): CommandHandler<"logs.tail"> {
  return async (params, ctx) => {
    const lines = Math.min(Math.max(1, Math.floor(params.lines)), LOGS_TAIL_MAX_LINES);
    const layout = environmentLayout(deps.stateDir, params.environment_id);
    const docker: DockerClient = ctx.docker;
    const erp = await requireErpContainer(docker, layout);
    ctx.signal.throwIfAborted();
    const text = await docker.containerLogs(erp.id, lines);
    ctx.signal.throwIfAborted();
    const tail = lastLines(text, lines);
    ctx.emit.log("info", `Read ${tail.lines.length} log line(s) of ${erp.name}${tail.truncated ? " (truncated)" : ""}`);
    return { container: erp.name, state: erp.state, lines: tail.lines, truncated: tail.truncated };
  };
}
