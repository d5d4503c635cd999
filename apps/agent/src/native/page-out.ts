// Handing the pages of the agent's own executable back to the kernel once start-up is over
// (apps/agent/native/page-out.c says how and why). Only the single executable does this; run
// from source there is no addon and nothing to do.
import { readFileSync } from "node:fs";
import type { Logger } from "../logger.ts";
import { loadPackedAddon } from "./packed-addons.ts";

export interface PageOutResult {
  /** RssFile of this process (KB) right before and right after. */
  rssFileKbBefore: number;
  rssFileKbAfter: number;
}

function rssFileKb(): number {
  const match = /^RssFile:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"));
  return match ? Number(match[1]) : Number.NaN;
}

/** Pages the executable out; null when running from source. Throws what the kernel answered. */
export function pageOutExecutable(keepDir: string): PageOutResult | null {
  const addon = loadPackedAddon("berth_page_out.node", keepDir) as { pageOut(): number } | null;
  if (addon === null) return null;
  const rssFileKbBefore = rssFileKb();
  addon.pageOut();
  return { rssFileKbBefore, rssFileKbAfter: rssFileKb() };
}

/**
 * Pages the executable out once, `afterMs` after `start()`: the agent calls it when it first
 * links, and start-up is over by then. Once only: the pages the idle daemon uses come back at
 * once, and paging them out again and again would only turn them into disk reads. A failure
 * is logged: it is an optimisation, never a fault.
 */
export function pageOutOnce(options: { keepDir: string; logger: Pick<Logger, "info" | "warn">; afterMs?: number }): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const run = () => {
    done = true;
    try {
      const result = pageOutExecutable(options.keepDir);
      if (result === null) return;
      const mb = (kb: number) => Math.round(kb / 102.4) / 10;
      options.logger.info({ rss_file_mb_before: mb(result.rssFileKbBefore), rss_file_mb_after: mb(result.rssFileKbAfter) }, "paged out the executable");
    } catch (error) {
      options.logger.warn({ error: error instanceof Error ? error.message : String(error) }, "cannot page out the executable");
    }
  };
  return {
    start() {
      if (timer !== undefined || done) return;
      timer = setTimeout(run, options.afterMs ?? 10_000);
      timer.unref();
    },
    stop() {
      done = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
