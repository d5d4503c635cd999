// A small server-sent events client over fetch, for reading GET /api/v1/events of a
// listening control plane as a real HTTP client would.
import type { TestControlPlane } from "./control-plane.ts";

/** The base URL of a control plane started with { listen: true }. */
export function urlOf(t: TestControlPlane): string {
  const a = t.app.server.address();
  if (!a || typeof a !== "object") throw new Error("not listening");
  return `http://127.0.0.1:${a.port}`;
}

export interface SseEvent {
  id: string | null;
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
}

export class SseStream {
  readonly events: SseEvent[] = [];
  lastId: string | null = null;
  retry: number | null = null;
  /** Every `retry:` hint, in order. */
  readonly retries: number[] = [];
  comments = 0;
  ended = false;
  private buffer = "";
  private readonly waiters = new Set<() => void>();

  private constructor(
    readonly status: number,
    readonly contentType: string | null,
    private readonly abort: AbortController,
  ) {}

  static async open(base: string, query: Record<string, string>, opts: { token?: string; lastEventId?: string } = {}) {
    const abort = new AbortController();
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.lastEventId !== undefined) headers["last-event-id"] = opts.lastEventId;
    const res = await fetch(`${base}/api/v1/events?${new URLSearchParams(query).toString()}`, { headers, signal: abort.signal });
    const stream = new SseStream(res.status, res.headers.get("content-type"), abort);
    if (res.status !== 200) {
      stream.body = await res.json();
      stream.ended = true;
      return stream;
    }
    void stream.pump(res.body!);
    return stream;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any = null;

  private async pump(body: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.buffer += decoder.decode(value, { stream: true });
        this.parse();
      }
    } catch {
      // aborted by close()
    }
    this.ended = true;
    this.notify();
  }

  private parse() {
    let cut: number;
    while ((cut = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      let event = "message";
      let data: string | null = null;
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) this.comments++;
        else if (line.startsWith("id: ")) this.lastId = line.slice(4);
        else if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data = data === null ? line.slice(6) : `${data}\n${line.slice(6)}`;
        else if (line.startsWith("retry: ")) this.retries.push((this.retry = Number(line.slice(7))));
      }
      if (data !== null) this.events.push({ id: this.lastId, event, data: JSON.parse(data) });
    }
    this.notify();
  }

  private notify() {
    for (const w of [...this.waiters]) w();
  }

  of(event: string): SseEvent[] {
    return this.events.filter((e) => e.event === event);
  }

  /** Waits until the check holds (events arrive asynchronously). */
  async until(check: (s: this) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.events.map((e) => e.event))}`);
      if (this.ended && !check(this)) throw new Error(`stream ended while waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(done, 100);
        this.waiters.add(done);
      });
    }
  }

  close() {
    this.abort.abort();
  }
}
