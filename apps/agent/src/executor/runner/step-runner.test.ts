// The step walker: order, a failing step, cancel at a boundary, a step past its deadline,
// and the per-environment lock.
import { describe, expect, it } from "vitest";
import { stepsForKind, type StepId } from "@berth/protocol";
import { createEnvironmentLocks } from "./environment-lock.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { CommandError, type CommandEmitter } from "./handler-types.ts";
import { runSteps, type StepWork } from "./step-runner.ts";

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

const ok: StepWork = async () => undefined;
const all = (kind: "stop" | "restart", work: Partial<Record<StepId, StepWork>> = {}) =>
  Object.fromEntries(stepsForKind(kind).map((step) => [step, work[step] ?? ok]));

describe("runSteps", () => {
  it("reports every step of the kind in order, with each step's message", async () => {
    const { seen, emit } = recorder();
    await runSteps("stop", { emit, signal: new AbortController().signal }, all("stop", { connecting: async () => "reachable" }));
    expect(seen).toEqual([
      "started:initializing",
      "finished:initializing",
      "started:connecting",
      "finished:connecting:reachable",
      "started:completed",
      "finished:completed",
    ]);
  });

  it("fails the step that throws, with its code, and runs nothing after it", async () => {
    const { seen, emit } = recorder();
    const run = runSteps(
      "stop",
      { emit, signal: new AbortController().signal },
      all("stop", {
        connecting: async () => {
          throw new CommandError("docker_unavailable", "the engine is down");
        },
      }),
    );
    await expect(run).rejects.toMatchObject({ code: "docker_unavailable", message: "the engine is down" });
    expect(seen.slice(2)).toEqual([
      "started:connecting",
      "log:error:connecting:Connecting to server failed: the engine is down",
      "failed:connecting:docker_unavailable:the engine is down",
    ]);
  });

  it("stops before the next step once cancelled, and logs it", async () => {
    const { seen, emit } = recorder();
    const controller = new AbortController();
    const run = runSteps(
      "restart",
      { emit, signal: controller.signal },
      all("restart", {
        connecting: async () => {
          controller.abort(new CommandError("cancelled", "cancelled by the control plane"));
        },
      }),
    );
    await expect(run).rejects.toMatchObject({ code: "cancelled" });
    expect(seen.slice(2)).toEqual([
      "started:connecting",
      "finished:connecting",
      'log:warning:starting_container:Cancelled: stopping before "Starting container" with 2 of 5 steps done',
    ]);
  });

  it("fails a step past its deadline and tells its work to stop", async () => {
    const { seen, emit } = recorder();
    let stopped = false;
    const run = runSteps(
      "stop",
      { emit, signal: new AbortController().signal },
      all("stop", {
        completed: (scope) =>
          new Promise(() => {
            scope.signal.addEventListener("abort", () => (stopped = true));
          }),
      }),
      { completed: 50 },
    );
    await expect(run).rejects.toMatchObject({ code: "deadline_exceeded" });
    expect(seen.at(-1)).toBe('failed:completed:deadline_exceeded:step "Completed" did not answer within 50 ms');
    expect(stopped).toBe(true);
  });
});

describe("environment locks and layout", () => {
  it("refuses a second operation on the same environment while the first runs", async () => {
    const locks = createEnvironmentLocks();
    let release = () => {};
    const first = locks.withLock("env-a", "deploy", () => new Promise<void>((resolve) => (release = resolve)));
    await expect(locks.withLock("env-a", "restart", async () => undefined)).rejects.toMatchObject({ code: "environment_busy" });
    await expect(locks.withLock("env-b", "restart", async () => "other")).resolves.toBe("other");
    release();
    await first;
    await expect(locks.withLock("env-a", "restart", async () => "free")).resolves.toBe("free");
  });

  it("refuses an environment id that is not a UUID before it becomes a path", () => {
    expect(() => environmentLayout("/state", "../../etc")).toThrow(CommandError);
    expect(environmentLayout("/state", "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b").dataDir).toBe(
      "/state/environments/e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b/data",
    );
  });
});
