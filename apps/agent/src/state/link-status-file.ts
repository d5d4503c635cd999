// A small file in which `run` records the state of its link, so `berth-agent status` (another
// process) can show it without a socket of its own.
import { existsSync, readFileSync } from "node:fs";
import { writeFileAtomic } from "./atomic-write.ts";
import { SECRET_FILE_MODE } from "./state-dir.ts";

export type LinkState = "connecting" | "handshaking" | "ready" | "waiting" | "stopped";

export interface LinkStatus {
  state: LinkState;
  /** When `state` last changed. */
  since: string;
  /** When the current connection reached `ready`; null when not connected. */
  connected_at: string | null;
  /** Last pong from the control plane: the heartbeat `status` shows. */
  last_heartbeat_at: string | null;
  rtt_ms: number | null;
  /** Why the last connection ended or failed, for the operator. */
  last_error: string | null;
  /** When the next attempt is due while `waiting`. */
  next_attempt_at: string | null;
}

export interface LinkStatusRecord extends LinkStatus {
  pid: number;
  updated_at: string;
}

export function writeLinkStatus(path: string, status: LinkStatus, now: Date): void {
  const record: LinkStatusRecord = { ...status, pid: process.pid, updated_at: now.toISOString() };
  // Rewritten on every heartbeat; not worth an fsync each time.
  writeFileAtomic(path, `${JSON.stringify(record)}\n`, SECRET_FILE_MODE, { durable: false });
}

/** Null when `run` never wrote one or it cannot be read: status then says so. */
export function readLinkStatus(path: string): LinkStatusRecord | null {
  if (!existsSync(path)) return null;
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
    if (typeof parsed !== "object" || parsed === null || typeof (parsed as LinkStatusRecord).state !== "string") return null;
    return parsed as LinkStatusRecord;
  } catch {
    return null;
  }
}
