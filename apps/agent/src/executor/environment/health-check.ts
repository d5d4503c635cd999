// Polls the ERP on its loopback port until it serves a request that needs its registry, the
// time is up, or the container has exited (no point waiting for a process that is gone).
//
// Not /web/health: Odoo answers it 200 whenever its HTTP server is up (since 15.0), also when
// the registry failed to load (a module that cannot be imported, a failed upgrade), and its
// ?db_server_status=1 (18.0+) only asks PostgreSQL (addons/web/controllers/webclient.py). A
// release whose modules are broken still serves /web/health; /web/login needs the registry
// of the database (odoo/http.py loads it for every request of a database), so it answers 500
// then. ERP-FACTS "Real Odoo": Health.
import { sleep, type Clock } from "../../clock.ts";
import type { DockerClient } from "../../docker/docker-client.ts";
import { stoppedReason } from "./erp-container.ts";
import type { StepScope } from "../runner/step-runner.ts";

export interface HealthOptions {
  hostPort: number;
  timeoutMs: number;
  intervalMs: number;
  signal: AbortSignal;
  clock: Clock;
  /** Null while the container runs; otherwise why it is not running. */
  stoppedReason: () => Promise<string | null>;
}

export type HealthOutcome = { healthy: true; attempts: number } | { healthy: false; attempts: number; reason: string };

export async function waitForHealth(options: HealthOptions): Promise<HealthOutcome> {
  const { clock, signal } = options;
  const deadline = clock.now().getTime() + options.timeoutMs;
  const url = `http://127.0.0.1:${options.hostPort}${HEALTH_PATH}`;
  let attempts = 0;
  let reason = "no answer yet";
  while (true) {
    signal.throwIfAborted();
    attempts += 1;
    const attempt = abortAfter(ATTEMPT_TIMEOUT_MS, signal);
    try {
      // A redirect (to a database selector, to /odoo) is not the login page: it is not followed.
      const response = await fetch(url, { signal: attempt.signal, redirect: "manual" });
      const body = (await response.text()).slice(0, 200);
      if (response.status === 200) return { healthy: true, attempts };
      reason = `GET ${HEALTH_PATH} answered ${response.status}: ${body}`;
    } catch (error) {
      signal.throwIfAborted();
      reason = `GET ${HEALTH_PATH} failed: ${causeOf(error)}`;
    } finally {
      attempt.clear();
    }
    const stopped = await options.stoppedReason();
    if (stopped !== null) return { healthy: false, attempts, reason: stopped };
    if (clock.now().getTime() + options.intervalMs > deadline) {
      return { healthy: false, attempts, reason: `not healthy after ${Math.round(options.timeoutMs / 1000)} s (${reason})` };
    }
    await sleep(clock, options.intervalMs, signal);
  }
}

const ATTEMPT_TIMEOUT_MS = 3_000;
/** The request that proves the ERP serves: the login page of its one database (odoo.conf's db_name). */
export const HEALTH_PATH = "/web/login";

/**
 * A signal that aborts `ms` from now or when `parent` does: a plain AbortController and a
 * timer that holds it. Not AbortSignal.any([parent, AbortSignal.timeout(ms)]): on Node 20 a
 * garbage collection can drop that timeout signal before it fires (nodejs/node#57736), and a
 * fetch to an ERP that accepted the connection but never answers then waits for good (a
 * deployment's health check hung until its step deadline in CI).
 */
export function abortAfter(ms: number, parent: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms);
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener("abort", onParent, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      parent.removeEventListener("abort", onParent);
    },
  };
}

// fetch hides the socket error (ECONNREFUSED, ECONNRESET) in `cause`.
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Waits until the ERP serves its login page; the caller decides what an unhealthy ERP means. */
export async function checkHealth(
  docker: DockerClient,
  containerId: string,
  hostPort: number | null,
  step: StepScope,
  clock: Clock,
  timing: { healthTimeoutMs: number; healthIntervalMs: number },
): Promise<boolean> {
  if (hostPort === null) {
    step.log("warning", "Health check skipped: port 8069 is not published (non-fatal)");
    return false;
  }
  const outcome = await waitForHealth({
    hostPort,
    timeoutMs: timing.healthTimeoutMs,
    intervalMs: timing.healthIntervalMs,
    signal: step.signal,
    clock,
    stoppedReason: stoppedReason(docker, containerId),
  });
  if (outcome.healthy) {
    step.log("info", `GET ${HEALTH_PATH} answered 200 (attempt ${outcome.attempts})`);
    return true;
  }
  step.log("warning", `Health check failed, continuing (non-fatal): ${outcome.reason}`);
  return false;
}
