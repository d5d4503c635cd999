// Following a deployment to its end (`berth deploy --follow`, `berth logs --follow`): the
// stream opens first, then the stored log lines are printed, then the live ones; a line
// seen both ways is printed once (by its id). A cut stream is reopened with Last-Event-ID
// (sse.ts), so it continues after the last event received. The deployment's status events
// move the steps on and end the follow; the stored state is read again on every reconnect
// (and the stored lines too on a `reset`, when the server could not resume), so a missed end
// is noticed too. The exit code follows the result: 0 succeeded, 1 failed or cancelled.
import type { Context } from "./context.ts";
import { deploymentSource, outcomeOfStatus, type DeploymentState, type LogLine } from "./deployments.ts";
import { CliError, EXIT } from "./errors.ts";
import type { Output } from "./output.ts";
import { progressView, type ProgressView } from "./progress.ts";
import { openResumableStream, type StreamEvent } from "./sse.ts";
import { printTests, testsOf } from "./test-results.ts";

export interface FollowOptions {
  /** Stored lines to print before the live ones: all, or only the last n. */
  tail?: number;
}

interface StatusEvent {
  deployment_id: string;
  status: string;
  progress_percent: number;
  current_step: string | null;
  error_message: string | null;
}

/** Follows the deployment to its end; returns its final state, or throws (exit 1) when it failed or was cancelled. */
export async function followDeployment(ctx: Context, id: string, opts: FollowOptions = {}): Promise<DeploymentState> {
  const out = ctx.out;
  const source = deploymentSource(ctx);
  const printer = new Printer(out, progressView(out), await source.steps(id).catch(() => null));
  let state = await source.get(id);
  printer.step(state);

  const seen = new Set<string>();
  const printLog = (l: LogLine) => {
    const key = String(l.id);
    if (seen.has(key)) return;
    seen.add(key);
    printer.log(l);
  };
  let catchingUp = true;
  const pending: StreamEvent[] = [];
  let finish: ((s: DeploymentState) => void) | null = null;
  const finished = new Promise<DeploymentState>((resolve) => (finish = resolve));
  let ending = false;

  /** Prints every stored line not printed yet and reads the state; ends the follow when it is final. */
  async function reload(): Promise<void> {
    const lines = await source.logs(id);
    const skip = opts.tail !== undefined && seen.size === 0 ? Math.max(0, lines.length - opts.tail) : 0;
    lines.slice(0, skip).forEach((l) => seen.add(String(l.id)));
    lines.slice(skip).forEach(printLog);
    state = await source.get(id);
    printer.step(state);
    if (state.outcome !== "active") await end();
  }

  async function end(): Promise<void> {
    if (ending) return;
    ending = true;
    try {
      // Lines the agent wrote just before the result may still be on their way: the stored ones count.
      (await source.logs(id)).forEach(printLog);
      state = await source.get(id);
    } catch (err) {
      // Not reached (a cut): the reconnect reads again and ends then.
      ending = false;
      throw err;
    }
    finish!(state);
  }

  async function handle(e: StreamEvent): Promise<void> {
    if (ending) return;
    if (e.event === "deployment.log") {
      const l = e.data as LogLine & { deployment_id: string };
      if (l.deployment_id === id) printLog(l);
    } else if (e.event === "deployment.status") {
      const s = e.data as StatusEvent;
      if (s.deployment_id !== id) return;
      printer.step({ ...state, step: s.current_step, percent: s.progress_percent });
      if (outcomeOfStatus(s.status) !== "active") await end();
    } else if (e.event === "reset") {
      // The server could not continue from where the stream stood: read the state again.
      await reload();
    }
  }

  const stream = openResumableStream({
    url: async () => (await source.ticket(state)).url,
    onOpen: async () => {
      if (catchingUp) {
        // The stream is open before the stored lines are read: nothing falls between. Should
        // this fail (a cut), the stream reconnects and it is done again.
        await reload();
        catchingUp = false;
        for (const e of pending.splice(0)) await handle(e);
        return;
      }
      out.note(out.paint("dim", "(event stream reconnected)"));
      // The stream resumes after the last event received (Last-Event-ID): the lines are its.
      // Whether the deployment ended meanwhile is read here, should its end be long past.
      state = await source.get(id);
      if (state.outcome !== "active") await end();
    },
    onCut: (why) => out.note(out.paint("dim", `(event stream interrupted: ${why}; reconnecting)`)),
    onEvent: async (e) => {
      if (catchingUp) pending.push(e);
      else await handle(e);
    },
  });
  const failed = stream.done.then(() => null);

  try {
    const final = await Promise.race([finished, failed.then(() => state)]);
    return report(out, printer, final);
  } finally {
    stream.stop();
    printer.done();
  }
}

function report(out: Output, printer: Printer, final: DeploymentState): DeploymentState {
  printer.done();
  if (out.json) out.line(JSON.stringify({ type: "result", outcome: final.outcome, status: final.status, deployment: final.record }));
  else printTests(out, testsOf(final.record));
  if (final.outcome === "succeeded") {
    if (!out.json) out.line(out.paint("green", `✓ Deployment ${final.id} succeeded (${final.status}).`));
    return final;
  }
  if (final.outcome === "active") throw new CliError(`Stopped following deployment ${final.id} before its end (status ${final.status}).`, EXIT.failed, "follow_interrupted");
  const where = final.step ? ` at step ${final.step}` : "";
  const why = final.error ? `: ${final.error}` : "";
  throw new CliError(`Deployment ${final.id} ${final.outcome === "cancelled" ? "was cancelled" : "failed"}${where}${why}`, EXIT.failed, final.outcome === "cancelled" ? "deployment_cancelled" : "deployment_failed");
}

/** Log lines and step changes, as text or NDJSON. */
class Printer {
  private lastStep: string | null = null;
  private lastPercent = 0;
  constructor(
    private readonly out: Output,
    private readonly view: ProgressView,
    private readonly steps: { id: string; name: string }[] | null,
  ) {}

  step(s: Pick<DeploymentState, "step" | "percent" | "status">): void {
    // A state read from the API can be older than an event already shown: steps only go forward.
    if (s.percent < this.lastPercent) return;
    this.lastPercent = s.percent;
    const changed = s.step !== null && s.step !== this.lastStep;
    if (s.step !== null) this.lastStep = s.step;
    if (this.out.json) {
      if (changed) this.out.line(JSON.stringify({ type: "step", step: s.step, ...this.position(s.step), progress_percent: s.percent }));
      return;
    }
    const pos = this.position(this.lastStep);
    const label = this.lastStep ? `step ${pos.index ? `${pos.index}/${pos.total} ` : ""}${pos.name ?? this.lastStep}` : s.status;
    this.view.update({ percent: s.percent, label, stepChanged: changed });
  }

  log(l: LogLine): void {
    if (this.out.json) {
      this.out.line(JSON.stringify({ type: "log", id: String(l.id), timestamp: l.timestamp, level: l.level, step: l.step, message: l.message }));
      return;
    }
    const time = l.timestamp.slice(11, 19);
    const level = l.level === "error" ? this.out.paint("red", "ERROR ") : l.level === "warning" ? this.out.paint("yellow", "WARN ") : "";
    this.view.print(`${this.out.paint("dim", time)} ${level}${l.message}`);
  }

  done(): void {
    this.view.done();
  }

  private position(step: string | null): { index?: number; total?: number; name?: string } {
    const i = this.steps?.findIndex((s) => s.id === step) ?? -1;
    return i >= 0 ? { index: i + 1, total: this.steps!.length, name: this.steps![i]!.name } : {};
  }
}
