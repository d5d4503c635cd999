// API clients: each organisation's CI job restarting (and every fourth time deploying; a real
// agent's environment is deployed first) its environment through HAProxy with an Idempotency-Key, retrying a failed request (connection reset, 5xx, 409 "still in
// progress") with the SAME key, then polling the task until it is terminal. Every request's
// outcome is kept so the drill can say which errors a retry fixed and which it did not, and
// whether a retry ever produced a second task.
import { randomUUID } from "node:crypto";

const PREFIX = "/api/public/v1";
const RETRY_FOR_MS = 90_000; // longer than an abandoned idempotency claim (60 s) is kept
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
/** The operations the clients ask for (the operation's kind is the action's name). */
export const CLIENT_ACTIONS = ["restart", "deploy"] as const;

export interface ApiRequestRecord {
  key: string;
  /** When the first attempt started (ms since epoch). */
  at: number;
  /** Errors seen before success or giving up: "<status or network error>". */
  errors: string[];
  /** The task ids the answers named (more than one for one key = a retry made a second task). */
  taskIds: Set<string>;
  outcome: "accepted" | "refused" | "failed";
}

export interface ClientTarget {
  organizationId: string;
  environmentId: string;
  /** Full access: the restarts (20 requests a minute per key). */
  apiKey: string;
  /** Read-only: the polling (120 a minute). */
  readKey: string;
}

export class ApiClient {
  readonly requests: ApiRequestRecord[] = [];
  readonly tasks: string[] = [];
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly baseUrl: string,
    readonly target: ClientTarget,
    private readonly pauseMs: number,
    /** Deploy first (an environment a real agent has not deployed yet), then as the others. */
    private readonly deployFirst = false,
  ) {}

  /** Requests the key's rate limit refused (429, retried after Retry-After with the same key): not errors. */
  rateLimited = 0;

  private async call(method: string, path: string, key?: string): Promise<{ status: number; body: Record<string, unknown> | null; retryAfterS: number }> {
    const res = await fetch(`${this.baseUrl}${PREFIX}${path}`, {
      method,
      headers: { authorization: `Bearer ${method === "GET" ? this.target.readKey : this.target.apiKey}`, ...(key ? { "idempotency-key": key } : {}) },
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let body: Record<string, unknown> | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    return { status: res.status, body, retryAfterS: Number(res.headers.get("retry-after") ?? 1) || 1 };
  }

  /** One action with one key, retried with the same key until it is answered or RETRY_FOR_MS passed. */
  private async act(action: (typeof CLIENT_ACTIONS)[number]): Promise<string | null> {
    const rec: ApiRequestRecord = { key: randomUUID(), at: Date.now(), errors: [], taskIds: new Set(), outcome: "failed" };
    this.requests.push(rec);
    let delay = 250;
    while (Date.now() - rec.at < RETRY_FOR_MS) {
      try {
        const r = await this.call("POST", `/environments/${this.target.environmentId}/${action}`, rec.key);
        if (r.status === 202 && typeof r.body?.task_id === "string") {
          rec.taskIds.add(r.body.task_id);
          rec.outcome = "accepted";
          return r.body.task_id;
        }
        const code = typeof r.body?.error === "string" ? r.body.error : "";
        if (r.status === 429) {
          this.rateLimited++;
          await new Promise((res) => setTimeout(res, r.retryAfterS * 1000));
          continue;
        }
        // 409 environment_not_running / task_in_progress: the environment is busy; a valid answer, not an error.
        if (r.status === 409 && code !== "idempotency_key_in_use") {
          rec.outcome = "refused";
          return null;
        }
        rec.errors.push(`${r.status} ${code}`.trim());
      } catch (err) {
        rec.errors.push(`network: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 4000);
    }
    return null;
  }

  private async waitTerminal(taskId: string): Promise<void> {
    const deadline = Date.now() + 120_000;
    while (!this.stopped && Date.now() < deadline) {
      try {
        const r = await this.call("GET", `/deployments/${taskId}`);
        if (r.status === 200 && TERMINAL.has(String(r.body?.status))) return;
      } catch {
        // counted on the write path only; polling retries
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  start(): void {
    this.loop = (async () => {
      await new Promise((r) => setTimeout(r, Math.random() * this.pauseMs));
      for (let n = 1; !this.stopped; n++) {
        const taskId = await this.act(n % 4 === 0 || (n === 1 && this.deployFirst) ? "deploy" : "restart");
        if (taskId) {
          this.tasks.push(taskId);
          await this.waitTerminal(taskId);
        }
        await new Promise((r) => setTimeout(r, this.pauseMs * (0.5 + Math.random())));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
