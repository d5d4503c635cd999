import { expect, it } from "vitest";
import { DEPLOY_STEP_IDS } from "@berth/protocol";
import { advance, currentStep, initialSteps, percentOf, type StepSignal, type StepStates } from "./migration-steps.ts";

/** The signals of a whole migration as the control plane and the agent's deploy send them. */
function wholeRun(opts: { fileStore: boolean }): StepSignal[] {
  const signals: StepSignal[] = [
    { kind: "started", step: "creating_project" },
    { kind: "done", step: "creating_project" },
    { kind: "started", step: "creating_environment" },
    { kind: "done", step: "creating_environment" },
  ];
  for (const step of DEPLOY_STEP_IDS) {
    signals.push({ kind: "deploy_step", step, phase: "started" });
    if (step === "starting_container") {
      signals.push(
        { kind: "restore_phase", phase: "downloading_backup", skipped: false },
        { kind: "restore_phase", phase: "extracting_backup", skipped: false },
        { kind: "restore_phase", phase: "restoring_database", skipped: false },
        { kind: "restore_phase", phase: "restoring_filestore", skipped: !opts.fileStore },
        { kind: "restore_phase", phase: "restarting_container", skipped: false },
      );
    }
    signals.push({ kind: "deploy_step", step, phase: "finished" });
  }
  signals.push({ kind: "succeeded" });
  return signals;
}

function play(signals: StepSignal[], git: boolean) {
  let s: StepStates = initialSteps({ gitRepository: git });
  let current: string | null = null;
  const seen: { percent: number; current: string | null }[] = [];
  for (const signal of signals) {
    s = advance(s, signal);
    current = currentStep(s, signal, current);
    seen.push({ percent: percentOf(s), current });
  }
  return { s, seen };
}

it("a whole migration walks 5 → 100 without ever moving back, in the table's percents", () => {
  const { s, seen } = play(wholeRun({ fileStore: true }), true);
  const percents = seen.map((x) => x.percent);
  for (let i = 1; i < percents.length; i++) expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);
  expect(new Set(percents)).toEqual(new Set([0, 5, 10, 20, 30, 40, 55, 70, 85, 95, 100]));
  expect(Object.values(s).every((v) => v === "completed")).toBe(true);
  // The steps a person sees named while they run, in order (each once).
  const named = seen.map((x) => x.current).filter((c, i, all) => c !== null && c !== all[i - 1]);
  expect(named).toEqual([
    "creating_project",
    "creating_environment",
    "deploying_containers",
    "cloning_repository",
    "deploying_containers",
    "downloading_backup",
    "extracting_backup",
    "restoring_database",
    "restoring_filestore",
    "restarting_container",
    "configuring_routing",
    "verifying_health",
  ]);
});

it("without a repository or a file store those steps are skipped and still count as done", () => {
  const { s, seen } = play(wholeRun({ fileStore: false }), false);
  expect(s.cloning_repository).toBe("skipped");
  expect(s.restoring_filestore).toBe("skipped");
  expect(seen.at(-1)!.percent).toBe(100);
  expect(seen.some((x) => x.current === "cloning_repository" || x.current === "restoring_filestore")).toBe(false);
});

it("a failure marks the running step failed and keeps the percent where it was", () => {
  const signals = wholeRun({ fileStore: true });
  const cut = signals.findIndex((x) => x.kind === "restore_phase" && x.phase === "restoring_database");
  const { s, seen } = play([...signals.slice(0, cut + 1), { kind: "failed" }], true);
  expect(s.restoring_database).toBe("failed");
  expect(s.restoring_filestore).toBe("pending");
  expect(seen.at(-1)!.percent).toBe(40);
});
