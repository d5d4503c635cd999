// Deployments that go wrong, on the real Docker engine: an image that is neither local nor
// pullable, a repository that cannot be cloned, a cancel in the middle, an ERP that starts
// unhealthy (non-fatal, spec 4.1 rule 7). Then destroy with delete_data clears what they
// left. One environment throughout: vfs copies each image per container, so reuse is cheap.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_STEP_IDS } from "@berth/protocol";
import { DOCKER_SOCKET } from "../../agent/agent.test-helpers.ts";
import { sharedGitHttpsServer } from "./git-https-server.test-helpers.ts";
import {
  createExecutorHarness,
  createGitRepository,
  deployParams,
  finishSuite,
  requireTestImages,
  stepTrail,
} from "../executor.test-helpers.ts";

const SUITE = "executor-failures";
const raw = new Dockerode({ socketPath: DOCKER_SOCKET });

/** started+finished for every step before `step`, then the given ending. */
function upTo(step: (typeof DEPLOY_STEP_IDS)[number], ending: string[]): string[] {
  const before = DEPLOY_STEP_IDS.slice(0, DEPLOY_STEP_IDS.indexOf(step));
  return [...before.flatMap((s) => [`started:${s}`, `finished:${s}`]), ...ending];
}

describe("deployments that fail, are cancelled or come up unhealthy", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 4_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const gitDir = mkdtempSync(join(tmpdir(), "berth-exec-git-"));

  beforeAll(async () => {
    await requireTestImages(h.docker);
  });

  afterAll(() => finishSuite(SUITE, h, gitDir), 120_000);

  it("fails at pulling_image with a readable error when the image is neither local nor pullable", async () => {
    // A registry on a closed loopback port: the pull fails at once and nothing leaves this machine.
    const image = "127.0.0.1:9/berth-test/erp:99.0";
    const run = await h.run("deploy", deployParams(env, { image }));
    expect(run.outcome).toMatchObject({
      ok: false,
      error: { code: "image_unavailable", message: expect.stringContaining(`image ${image} not found locally and could not be pulled: `) },
    });
    expect(stepTrail(run)).toEqual(upTo("pulling_image", ["started:pulling_image", "failed:pulling_image"]));
    const failed = run.events.find((e) => e.kind === "step.failed");
    expect(failed).toMatchObject({ step: "pulling_image", error: { code: "image_unavailable" } });
    expect(run.logs).toContainEqual(
      expect.objectContaining({ level: "error", step: "pulling_image", message: expect.stringContaining("not found locally") }),
    );
  }, 60_000);

  it("fails at cloning_repo with git's reason when the repository cannot be cloned", async () => {
    const url = (await sharedGitHttpsServer()).url(join(gitDir, "no-such-repo.git"));
    const run = await h.run("deploy", deployParams(env, { git: { url, branch: "main", commit: null } }));
    expect(run.outcome).toMatchObject({
      ok: false,
      error: {
        code: "git_clone_failed",
        message: expect.stringMatching(new RegExp(`^git clone of ${url} \\(branch main\\) failed: .*(does not appear to be a git repository|not found|404)`)),
      },
    });
    expect(stepTrail(run)).toEqual(upTo("cloning_repo", ["started:cloning_repo", "failed:cloning_repo"]));
    // Nothing half-cloned is left beside the checkout.
    expect(readdirSync(join(h.stateDir, "environments", env)).filter((name) => name.startsWith("addons."))).toEqual([]);
  }, 60_000);

  it("stops at the next step boundary when cancelled, and says so", async () => {
    const run = await h.run("deploy", deployParams(env), {
      onStep: (step, cancel) => {
        if (step === "cloning_platform_repos") cancel();
      },
    });
    expect(run.outcome).toMatchObject({ ok: false, error: { code: "cancelled" } });
    // The step under way finishes; the next one never starts.
    expect(stepTrail(run)).toEqual(upTo("cloning_org_repos", []));
    expect(run.logs.at(-1)).toMatchObject({
      level: "warning",
      step: "cloning_org_repos",
      message: expect.stringMatching(/^Cancelled: stopping before "Cloning organisation repositories"/),
    });
    expect(await raw.listContainers({ all: true, filters: { label: [`berth.environment_id=${env}`, "berth.role=erp"] } })).toEqual([]);
  }, 60_000);

  it("succeeds with warnings when the ERP never becomes healthy and its requirements cannot be installed", async () => {
    const repo = await createGitRepository(gitDir);
    const commit = await repo.commit("slow", { "requirements.txt": "requests==2.32.3\n" });
    // An ERP that takes longer to serve than the health check waits (4 s). (A broken registry
    // cannot stand for it any more: Odoo's own -i base fails on it, as the strict stand-in's does.)
    const run = await h.run("deploy", deployParams(env, { git: { url: repo.url, branch: "main", commit }, env: { BERTH_START_DELAY: "8" } }));
    expect(run.outcome).toMatchObject({ ok: true, result: { healthy: false, commit } });
    expect(stepTrail(run)).toEqual(DEPLOY_STEP_IDS.flatMap((s) => [`started:${s}`, `finished:${s}`]));
    expect(run.logs).toContainEqual(
      expect.objectContaining({
        level: "warning",
        step: "health_check",
        message: expect.stringMatching(/^Health check failed, continuing \(non-fatal\): not healthy after 4 s \(GET \/web\/login failed: /),
      }),
    );
    // The test image has no python3: said, not failed. The layer is tried before any ERP of the deploy runs.
    const pulling = run.logs.filter((l) => l.step === "pulling_image").map((l) => `${l.level}: ${l.message}`);
    expect(pulling).toContainEqual("info: Installing /mnt/extra-addons/requirements.txt into the environment's Python layer (/opt/berth-python, a virtual environment that survives restarts)");
    expect(pulling).toContainEqual(expect.stringMatching(/^warning: The requirements were not installed \(the image has no python3\), continuing \(non-fatal\)/));
    expect(run.logs.filter((l) => l.step === "installing_dependencies").map((l) => `${l.level}: ${l.message}`)).toEqual([
      "warning: Requirements not installed: the image has no python3 (non-fatal)",
    ]);
  }, 60_000);

  it("destroy with delete_data removes the environment entirely, data dir included", async () => {
    const run = await h.run("destroy", { deployment_id: randomUUID(), environment_id: env, delete_data: true });
    expect(run.outcome).toMatchObject({
      ok: true,
      result: { deleted_containers: true, deleted_database: true, deleted_data: true },
    });
    expect(existsSync(join(h.stateDir, "environments", env))).toBe(false);
    const filters = { label: [`berth.environment_id=${env}`] };
    expect(await raw.listContainers({ all: true, filters })).toEqual([]);
    expect(await raw.listNetworks({ filters })).toEqual([]);
    expect((await raw.listVolumes({ filters })).Volumes ?? []).toEqual([]);

    // Destroying again finds nothing and says so.
    const again = await h.run("destroy", { deployment_id: randomUUID(), environment_id: env, delete_data: true });
    expect(again.outcome).toMatchObject({ ok: true, result: { deleted_containers: false, deleted_database: false } });
  }, 60_000);

  it("refuses lifecycle commands for an environment that is not deployed here", async () => {
    const run = await h.run("restart", { deployment_id: randomUUID(), environment_id: env });
    expect(run.outcome).toMatchObject({ ok: false, error: { code: "not_deployed" } });
    expect(stepTrail(run)).toEqual(["started:initializing", "failed:initializing"]);
  });
});
