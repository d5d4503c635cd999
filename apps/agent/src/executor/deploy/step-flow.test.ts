// The deploy's steps as one linear function over runSteps: each step reported in order with
// what its work returned, a value handed to the next step, a failing step, a cancel between
// steps and a flow that skips a step.
import { describe, expect, it } from "vitest";
import { CommandError, type CommandEmitter } from "../runner/handler-types.ts";
import { runStepFlow } from "./step-flow.ts";

function recorder() {
  const seen: string[] = [];
  const emit: CommandEmitter = {
    log: (level, message, options) => void seen.push(`log:${level}:${options?.step ?? "-"}:${message}`),
    stepStarted: (step) => void seen.push(`started:${step}`),
    stepFinished: (step, message) => void seen.push(`finished:${step}${message ? `:${message}` : ""}`),
    stepFailed: (step, error) => void seen.push(`failed:${step}:${error.code}:${error.message}`),
  };
  return { seen, emit };
}

describe("runStepFlow", () => {
  it("runs the steps in order, reports each summary and hands each step's output on", async () => {
    const { seen, emit } = recorder();
    const out = await runStepFlow("stop", { emit, signal: new AbortController().signal }, {}, async (step) => {
      const { n } = await step("initializing", async (s) => {
        s.log("info", "preparing");
        return { summary: "prepared", n: 2 };
      });
      const { m } = await step("connecting", async () => ({ summary: `got ${n}`, m: n * 3 }));
      await step("completed", async () => ({ summary: "done" }));
      return m;
    });
    expect(out).toBe(6);
    expect(seen).toEqual([
      "started:initializing",
      "log:info:initializing:preparing",
      "finished:initializing:prepared",
      "started:connecting",
      "finished:connecting:got 2",
      "started:completed",
      "finished:completed:done",
    ]);
  });

  it("fails the step whose work throws, with its code, and runs nothing after it", async () => {
    const { seen, emit } = recorder();
    let after = false;
    const run = runStepFlow("stop", { emit, signal: new AbortController().signal }, {}, async (step) => {
      await step("initializing", async () => ({ summary: "ok" }));
      await step("connecting", async () => {
        throw new CommandError("docker_unavailable", "the engine is down");
      });
      after = true;
      await step("completed", async () => ({ summary: "done" }));
    });
    await expect(run).rejects.toMatchObject({ code: "docker_unavailable", message: "the engine is down" });
    expect(after).toBe(false);
    expect(seen.slice(2)).toEqual([
      "started:connecting",
      "log:error:connecting:Connecting to server failed: the engine is down",
      "failed:connecting:docker_unavailable:the engine is down",
    ]);
  });

  it("stops before the next step once cancelled, and the flow runs no further work", async () => {
    const { seen, emit } = recorder();
    const controller = new AbortController();
    let started = false;
    let ended = false;
    const run = runStepFlow("stop", { emit, signal: controller.signal }, {}, async (step) => {
      try {
        await step("initializing", async () => ({ summary: "ok" }));
        await step("connecting", async () => {
          controller.abort(new CommandError("cancelled", "cancelled by the control plane"));
          return { summary: "reachable" };
        });
        await step("completed", async () => {
          started = true;
          return { summary: "done" };
        });
      } finally {
        ended = true;
      }
    });
    await expect(run).rejects.toMatchObject({ code: "cancelled" });
    await new Promise((resolve) => setImmediate(resolve));
    // The flow ended at the step it was not given: nothing is left waiting.
    expect({ started, ended }).toEqual({ started: false, ended: true });
    expect(seen.at(-1)).toBe('log:warning:completed:Cancelled: stopping before "Completed" with 2 of 3 steps done');
  });

  it("refuses a flow that runs a step out of order, failing the step it skipped", async () => {
    const { seen, emit } = recorder();
    const run = runStepFlow("stop", { emit, signal: new AbortController().signal }, {}, async (step) => {
      await step("initializing", async () => ({ summary: "ok" }));
      await step("completed", async () => ({ summary: "done" }));
    });
    await expect(run).rejects.toMatchObject({ code: "step_failed", message: "the deploy ran step completed where connecting comes" });
    expect(seen.at(-1)).toBe("failed:connecting:step_failed:the deploy ran step completed where connecting comes");
  });
});
