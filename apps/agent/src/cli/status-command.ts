// `berth-agent status`: what an operator asks first. Reads the identity, the link status the
// daemon writes, and the journal's figures; works whether the daemon runs or not.
import { existsSync } from "node:fs";
import type { StatusConfig } from "../config/agent-config.ts";
import { openJournal } from "../journal/journal.ts";
import type { JournalStats } from "../journal/journal-types.ts";
import { peekServerId } from "../state/identity.ts";
import { readLinkStatus, type LinkStatusRecord } from "../state/link-status-file.ts";
import { statePaths } from "../state/state-dir.ts";
import { AGENT_VERSION } from "../version.ts";
import type { CliIo } from "./cli-io.ts";

interface StatusReport {
  agent_version: string;
  state_dir: string;
  server_id: string | null;
  daemon: { running: boolean; pid: number | null };
  link: LinkStatusRecord | null;
  journal: JournalStats | { error: string } | null;
}

export function statusCommand(config: StatusConfig, io: CliIo, now = new Date()): number {
  const paths = statePaths(config.stateDir);
  const serverId = existsSync(paths.identity) ? peekServerId(paths.identity) : null;
  const link = readLinkStatus(paths.linkStatus);
  const running = link !== null && link.state !== "stopped" && isAlive(link.pid);
  const report: StatusReport = {
    agent_version: AGENT_VERSION,
    state_dir: paths.dir,
    server_id: serverId,
    daemon: { running, pid: running && link !== null ? link.pid : null },
    link,
    journal: journalStats(paths.journal),
  };
  if (config.json) io.out(JSON.stringify(report, null, 2));
  else for (const line of describe(report, now)) io.out(line);
  return serverId === null ? 1 : 0;
}

function journalStats(path: string): StatusReport["journal"] {
  if (!existsSync(path)) return null;
  try {
    // SQLite in WAL mode lets this read while the daemon writes.
    const journal = openJournal({ path });
    try {
      return journal.stats();
    } finally {
      journal.close();
    }
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

function describe(report: StatusReport, now: Date): string[] {
  const lines = [`server:   ${report.server_id ?? "not enrolled (run berth-agent enroll)"}`];
  const link = report.link;
  if (!report.daemon.running) {
    lines.push(`agent:    not running${link === null ? "" : ` (last update ${ago(link.updated_at, now)})`}`);
  } else if (link !== null) {
    lines.push(`agent:    running (pid ${link.pid}, version ${AGENT_VERSION})`);
    const state =
      link.state === "ready" ? `connected since ${link.connected_at ?? link.since}` : `${link.state} since ${link.since}`;
    lines.push(`link:     ${state}`);
    const rtt = link.rtt_ms === null ? "" : `, rtt ${link.rtt_ms} ms`;
    lines.push(`heartbeat: ${link.last_heartbeat_at === null ? "none yet" : `${ago(link.last_heartbeat_at, now)}${rtt}`}`);
    if (link.state !== "ready" && link.last_error !== null) lines.push(`last error: ${link.last_error}`);
    if (link.next_attempt_at !== null) lines.push(`next attempt: ${link.next_attempt_at}`);
  }
  const journal = report.journal;
  if (journal === null) lines.push("journal:  none yet");
  else if ("error" in journal) lines.push(`journal:  unreadable: ${journal.error}`);
  else {
    const oldest = journal.oldestPendingAgeMs === null ? "" : `, oldest ${Math.round(journal.oldestPendingAgeMs / 1000)} s old`;
    lines.push(`journal:  ${journal.pendingCount} events pending (${kib(journal.pendingBytes)})${oldest}`);
    const file = kib(journal.fileBytes + journal.walBytes);
    lines.push(`          file ${file}, last acked seq ${journal.lastAckedSeq}, dropped ${journal.droppedTotal}`);
  }
  return lines;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user (status run without root).
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function ago(iso: string, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  return Number.isFinite(seconds) ? `${seconds} s ago` : iso;
}

function kib(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
