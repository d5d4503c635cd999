// The event stream (GET /api/v1/events, server-sent events) as the CLI reads it: opened with
// a fresh single-use ticket each time, and reopened after a cut with Last-Event-ID, so the
// server continues exactly after the last event received (nothing skipped or repeated). A
// stream silent for longer than its keep-alives allow is taken as cut too.
import { BerthApiError } from "@berth/protocol/api-client";
import { USER_AGENT } from "./context.ts";
import { CliError, EXIT } from "./errors.ts";

export interface StreamEvent {
  id: string | null;
  event: string;
  data: unknown;
}

export interface ResumableStreamOptions {
  /** A URL with a fresh ticket, asked for before every (re)connect. */
  url: () => Promise<string>;
  onEvent: (e: StreamEvent) => void | Promise<void>;
  /** Called once the stream is open (the first time and after every reconnect). */
  onOpen?: (reconnected: boolean) => void | Promise<void>;
  /** Called when a connection is lost, before reconnecting. */
  onCut?: (why: string) => void;
  /** No byte for this long (keep-alives come every 15 s) counts as a cut. */
  silenceMs?: number;
  /** Give up when no connection could be made for this long. */
  giveUpMs?: number;
}

export interface ResumableStream {
  /** Resolves when stopped by stop(); rejects when the stream cannot be (re)opened. */
  done: Promise<void>;
  stop(): void;
}

const MAX_BACKOFF_MS = 5_000;

export function openResumableStream(opts: ResumableStreamOptions): ResumableStream {
  let lastId: string | null = null;
  let stopped = false;
  let current: AbortController | null = null;
  const silenceMs = opts.silenceMs ?? 45_000;
  const giveUpMs = opts.giveUpMs ?? 120_000;

  async function connectOnce(reconnected: boolean): Promise<"opened" | "failed"> {
    const abort = new AbortController();
    current = abort;
    let watchdog: NodeJS.Timeout | undefined;
    let opened = false;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => abort.abort(new Error("the stream went silent")), silenceMs);
    };
    try {
      const url = await opts.url();
      const headers: Record<string, string> = { accept: "text/event-stream", "user-agent": USER_AGENT };
      if (lastId) headers["last-event-id"] = lastId;
      arm();
      const res = await fetch(url, { headers, signal: abort.signal });
      if (!res.ok || !res.body) {
        const body = (await res.json().catch(() => null)) as { error?: string; message?: string } | null;
        // Credentials or access refused: reconnecting will not help.
        if (res.status === 401 || res.status === 403 || res.status === 404) {
          throw new CliError(`The event stream was refused: ${body?.message ?? `HTTP ${res.status}`} (${body?.error ?? res.status})`, res.status === 404 ? EXIT.failed : EXIT.auth, body?.error ?? "stream_refused");
        }
        return "failed";
      }
      opened = true;
      await opts.onOpen?.(reconnected);
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        arm();
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const e = parseBlock(block);
          if (e.data !== null) await opts.onEvent({ id: e.id, event: e.event, data: JSON.parse(e.data) });
          // Remembered once the event was handled: a cut during it resumes before it.
          if (e.id !== null) lastId = e.id;
          if (stopped) return "opened";
        }
      }
      if (!stopped) opts.onCut?.("the server closed the stream");
      return "opened";
    } catch (err) {
      // Refused (credentials, access, a deployment that is gone): reconnecting will not help.
      if (err instanceof CliError || (err instanceof BerthApiError && err.status < 500 && err.status !== 429)) throw err;
      if (!stopped) opts.onCut?.(err instanceof Error ? (abort.signal.aborted && abort.signal.reason instanceof Error ? abort.signal.reason.message : err.message) : String(err));
      return opened ? "opened" : "failed";
    } finally {
      clearTimeout(watchdog);
      current = null;
    }
  }

  const done = (async () => {
    let reconnected = false;
    let failingSince: number | null = null;
    let backoff = 250;
    while (!stopped) {
      const r = await connectOnce(reconnected);
      if (stopped) return;
      reconnected = true;
      if (r === "opened") {
        failingSince = null;
        backoff = 250;
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      failingSince ??= Date.now();
      if (Date.now() - failingSince > giveUpMs) {
        throw new CliError(`The event stream could not be reopened for ${Math.round(giveUpMs / 1000)} s.`, EXIT.unreachable, "unreachable");
      }
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  })();

  return {
    done,
    stop() {
      stopped = true;
      current?.abort(new Error("stopped"));
    },
  };
}

function parseBlock(block: string): { id: string | null; event: string; data: string | null } {
  let id: string | null = null;
  let event = "message";
  let data: string | null = null;
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data = data === null ? value : `${data}\n${value}`;
  }
  return { id, event, data };
}
