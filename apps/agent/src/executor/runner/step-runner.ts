// Walks an operation's steps (stepsForKind) in order, reporting each as started, finished
// or failed. Cancel is honoured at every step boundary; inside a step, waits (readiness,
// health) stop too, through the step's signal. Every step has a deadline.
import { STEP_NAMES, stepsForKind, type LogLevel, type OperationKind, type StepId } from "@berth/protocol";
import { withDeadline } from "../../with-deadline.ts";
import { CommandError, type HandlerContext, type JsonObject } from "./handler-types.ts";

export interface StepScope {
  step: StepId;
  /** Aborted when the command is cancelled or the step passes its deadline. */
  signal: AbortSignal;
  log(level: LogLevel, message: string, data?: JsonObject): void;
}

/** A step's work; what it returns becomes the step.finished message. */
export type StepWork = (scope: StepScope) => Promise<string | void>;

export type StepDeadlines = Partial<Record<StepId, number>>;

export const DEFAULT_STEP_DEADLINE_MS = 120_000;

export async function runSteps(
  kind: OperationKind,
  ctx: Pick<HandlerContext, "signal" | "emit">,
  work: Partial<Record<StepId, StepWork>>,
  deadlines: StepDeadlines = {},
): Promise<void> {
  const steps = stepsForKind(kind);
  for (const [index, step] of steps.entries()) {
    if (ctx.signal.aborted) stopBefore(ctx, step, index, steps.length);
    const run = work[step];
    if (run === undefined) throw new Error(`no work defined for step ${step} of ${kind}`);

    ctx.emit.stepStarted(step, STEP_NAMES[step]);
    const controller = new AbortController();
    const signal = AbortSignal.any([ctx.signal, controller.signal]);
    const scope: StepScope = {
      step,
      signal,
      log: (level, message, data) => ctx.emit.log(level, message, { step, ...(data === undefined ? {} : { data }) }),
    };
    const ms = deadlines[step] ?? DEFAULT_STEP_DEADLINE_MS;
    try {
      const message = await withDeadline(run(scope), ms, `step "${STEP_NAMES[step]}"`);
      ctx.emit.stepFinished(step, message ?? undefined);
    } catch (error) {
      // Past its deadline the work is still running: its signal tells it to stop.
      controller.abort(error);
      const body = failureBody(error, ctx.signal);
      if (body.code === "cancelled") {
        ctx.emit.log("warning", `Cancelled during "${STEP_NAMES[step]}": stopping here`, { step });
      } else {
        ctx.emit.log("error", `${STEP_NAMES[step]} failed: ${body.message}`, { step });
      }
      ctx.emit.stepFailed(step, body);
      // What the step did before it failed (a refused deploy's test results) stays with the error.
      throw new CommandError(body.code, body.message, error instanceof CommandError ? error.result : undefined);
    }
  }
}

function stopBefore(ctx: Pick<HandlerContext, "signal" | "emit">, step: StepId, done: number, total: number): never {
  const body = failureBody(ctx.signal.reason, ctx.signal);
  const what = body.code === "cancelled" ? "Cancelled" : `Stopped (${body.message})`;
  ctx.emit.log("warning", `${what}: stopping before "${STEP_NAMES[step]}" with ${done} of ${total} steps done`, { step });
  throw new CommandError(body.code, body.message);
}

/** The code and message a failure is reported with; a cancel or the run deadline wins. */
export function failureBody(error: unknown, signal: AbortSignal): { code: string; message: string } {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof CommandError) return { code: reason.code, message: reason.message };
    return { code: "cancelled", message: "cancelled" };
  }
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return { code: typeof code === "string" && /^[a-z_]{1,64}$/.test(code) ? code : "step_failed", message };
}
