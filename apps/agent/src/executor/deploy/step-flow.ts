// A deploy's steps as one linear function: `flow` calls step(id, work) for each step of the
// operation, in order, and gets back what the work made, so a later step's input is a plain
// value an earlier step returned and TypeScript proves it is there. Reporting, cancel between
// steps and deadlines stay runSteps's: the work runSteps runs for an id waits for the flow
// to reach that id, and finishes with it.
import { stepsForKind, type OperationKind, type StepId } from "@berth/protocol";
import type { HandlerContext } from "../runner/handler-types.ts";
import { runSteps, type StepDeadlines, type StepScope, type StepWork } from "../runner/step-runner.ts";

/** What a step's work returns: its summary (the step.finished message) and what it made. */
export interface StepDone {
  summary: string;
}

export type RunStep = <R extends StepDone>(id: StepId, work: (scope: StepScope) => Promise<R>) => Promise<R>;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  // A step the run never reaches is rejected with nobody waiting on it.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export async function runStepFlow<T>(
  kind: OperationKind,
  ctx: Pick<HandlerContext, "signal" | "emit">,
  deadlines: StepDeadlines,
  flow: (step: RunStep) => Promise<T>,
): Promise<T> {
  const ids = stepsForKind(kind);
  const slots = ids.map((id) => ({ id, scope: deferred<StepScope>(), done: deferred<string>() }));
  let next = 0;

  const step: RunStep = async (id, work) => {
    const slot = slots[next++];
    if (slot?.id !== id) throw new Error(`the deploy ran step ${id} where ${slot?.id ?? "no step"} comes`);
    const scope = await slot.scope.promise;
    try {
      const made = await work(scope);
      slot.done.resolve(made.summary);
      return made;
    } catch (error) {
      slot.done.reject(error);
      throw error;
    }
  };

  const work: Partial<Record<StepId, StepWork>> = Object.fromEntries(
    slots.map((slot) => [
      slot.id,
      (scope: StepScope) => {
        slot.scope.resolve(scope);
        return slot.done.promise;
      },
    ]),
  );

  const result = flow(step);
  // A flow that fails, or ends, outside a step fails the step runSteps waits on.
  result.then(
    () => slots.forEach((slot) => slot.done.reject(new Error(`the deploy ended before step ${slot.id}`))),
    (error: unknown) => slots.forEach((slot) => slot.done.reject(error)),
  );
  try {
    await runSteps(kind, ctx, work, deadlines);
  } catch (error) {
    // Stopped (a failure, a cancel, a deadline): a flow still running ends at its next step.
    slots.forEach((slot) => slot.scope.reject(error));
    throw error;
  }
  return result;
}
