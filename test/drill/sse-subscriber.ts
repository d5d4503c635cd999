// An SSE subscriber with EventSource semantics through HAProxy: takes a ticket
// (POST /events/tickets with the organisation's key), reads GET /api/v1/events, and when the
// stream ends or breaks reconnects with the last id it saw as Last-Event-ID (after the
// server's retry hint, or 500 ms). Every frame's id is kept: the drill compares the rows
// they name with the stored event log (a missing row is a gap, a repeated one a duplicate).

export interface SseFrame {
  id: string;
  event: string;
  at: number;
}

export class SseSubscriber {
  readonly frames: SseFrame[] = [];
  reconnects = 0;
  errors = 0;
  lastId: string | null = null;
  private retryMs = 500;
  private stopped = false;
  private abort: AbortController | null = null;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly baseUrl: string,
    readonly organizationId: string,
    private readonly apiKey: string,
  ) {}

  private async ticket(): Promise<string> {
    const res = await fetch(`${this.baseUrl}/api/public/v1/events/tickets`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.apiKey}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { ticket?: string };
    if (res.status !== 201 || !body.ticket) throw new Error(`ticket: ${res.status}`);
    return body.ticket;
  }

  private async readOnce(): Promise<void> {
    const ticket = await this.ticket();
    this.abort = new AbortController();
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (this.lastId) headers["last-event-id"] = this.lastId;
    const q = new URLSearchParams({ organization_id: this.organizationId, ticket });
    const res = await fetch(`${this.baseUrl}/api/v1/events?${q.toString()}`, { headers, signal: this.abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`stream: ${res.status}`);
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id: string | null = null;
        let event = "message";
        let hasData = false;
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) id = line.slice(4);
          else if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) hasData = true;
          else if (line.startsWith("retry: ")) this.retryMs = Number(line.slice(7)) || this.retryMs;
        }
        if (id !== null) this.lastId = id;
        if (hasData && id !== null) this.frames.push({ id, event, at: Date.now() });
      }
    }
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        try {
          await this.readOnce();
        } catch {
          if (!this.stopped) this.errors++;
        }
        if (this.stopped) break;
        this.reconnects++;
        await new Promise((r) => setTimeout(r, Math.min(this.retryMs, 5000)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.loop;
  }
}
