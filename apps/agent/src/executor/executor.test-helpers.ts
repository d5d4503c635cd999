// For the environment handlers' tests: handlers from the real registry, run as the command
// runner runs them, with their events going through the real emitter into a real journal,
// against the real Docker engine and the locally built test images. Every Docker object a
// test makes carries the suite's labels, so clean-up finds exactly its own.
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { Command, CommandParams, CommandType, DeployParams, Event, StepId } from "@berth/protocol";
import { DOCKER_SOCKET } from "../agent/agent.test-helpers.ts";
import { systemClock } from "../clock.ts";
import { createDockerClient, type DockerClient } from "../docker/docker-client.ts";
import { createEventOutbox } from "../events/event-outbox.ts";
import { toWireEvent } from "../events/wire-events.ts";
import { openJournal } from "../journal/journal.ts";
import type { Journal } from "../journal/journal-types.ts";
import { createEmitter } from "./runner/command-emitter.ts";
import { failureOf, type CommandOutcome } from "./runner/command-outcome.ts";
import type { TimingOverrides } from "./runner/executor-deps.ts";
import { CommandError, type CommandHandler, type HandlerRegistry } from "./runner/handler-types.ts";
import { createRegistry, type RegistryDeps } from "./registry.ts";
import { DEFAULT_PROXY_HOST, type ProxyHostSettings } from "../proxy/proxy-container.ts";
import { createReverseProxy, type ReverseProxy } from "../proxy/reverse-proxy.ts";
import { sharedGitHttpsServer } from "./deploy/git-https-server.test-helpers.ts";

const execFileAsync = promisify(execFile);

export const PG_IMAGE = "berth-test/postgres:15";
export const ERP_IMAGE = "berth-test/erp:17.0";
export const PROXY_IMAGE = "berth-test/caddy:2";
export const SUITE_LABEL = "berth.test.suite";
export const RUN_LABEL = "berth.test.run";

export interface Run {
  outcome: CommandOutcome;
  events: Event[];
  steps: { kind: string; step: StepId }[];
  logs: { level: string; message: string; step: StepId | null }[];
}

/** The steps a run walked, as `started:<step>`, `finished:<step>`, `failed:<step>`. */
export function stepTrail(run: Run): string[] {
  return run.steps.map((s) => `${s.kind.slice(5)}:${s.step}`);
}

/** Fails with what to run when the local test images are missing. */
export async function requireTestImages(docker: Pick<DockerClient, "imageExists">): Promise<void> {
  for (const image of [PG_IMAGE, ERP_IMAGE]) {
    if (!(await docker.imageExists(image))) throw new Error(`image ${image} is missing: run \`bash .ci/docker-setup.sh\``);
  }
}

export interface ExecutorHarness {
  stateDir: string;
  docker: DockerClient;
  registry: HandlerRegistry;
  runId: string;
  labels: Record<string, string>;
  /** The run's own proxy: named after the run, on ports Docker chooses on 127.0.0.1. */
  proxy: ReverseProxy;
  /** Runs a command through its handler; `onStep` sees each step as it starts. */
  run<T extends CommandType>(type: T, params: CommandParams<T>, options?: { onStep?: (step: StepId, cancel: () => void) => void }): Promise<Run>;
  close(): Promise<void>;
}

export function createExecutorHarness(
  suite: string,
  timing: TimingOverrides = {},
  proxyHost: Partial<ProxyHostSettings> = {},
  preDeploy: RegistryDeps["preDeploy"] = {},
  more: Pick<RegistryDeps, "controlPlaneUrl"> = {},
): ExecutorHarness {
  const stateDir = mkdtempSync(join(tmpdir(), `berth-exec-${suite}-`));
  const runId = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
  const labels = { [SUITE_LABEL]: suite, [RUN_LABEL]: runId };
  const docker = createDockerClient({ socketPath: DOCKER_SOCKET });
  const journal: Journal = openJournal({ path: join(stateDir, "journal.db") });
  const outbox = createEventOutbox(journal);
  const proxy = createReverseProxy({
    stateDir,
    host: {
      ...DEFAULT_PROXY_HOST,
      name: `berth-proxy-${runId}`,
      httpPort: "",
      httpsPort: "",
      bindAddress: "127.0.0.1",
      publicAddresses: ["127.0.0.1"],
      certificateWaitMs: 0,
      ...proxyHost,
    },
    labels,
    emit: (event) => outbox.append(event),
  });
  const registry = createRegistry({
    proxy,
    journal,
    stateDir,
    startedAt: new Date(),
    clock: systemClock,
    extraLabels: labels,
    timing,
    preDeploy,
    ...more,
  });

  return {
    stateDir,
    docker,
    registry,
    runId,
    labels,
    proxy,
    async run(type, params, options = {}) {
      // The handler runs as the runner runs it; the emitter reads only the id and the params.
      const command: Pick<Command, "command_id" | "params"> = { command_id: randomUUID(), params };
      const controller = new AbortController();
      const cancel = () => controller.abort(new CommandError("cancelled", "cancelled by the control plane"));
      const emitter = createEmitter({ outbox, command, isClosed: () => false });
      const emit = {
        ...emitter,
        stepStarted: (step: StepId, message?: string) => {
          emitter.stepStarted(step, message);
          options.onStep?.(step, cancel);
        },
      };
      const handler = registry[type] as CommandHandler | undefined;
      if (handler === undefined) throw new Error(`no handler for ${type}`);
      let outcome: CommandOutcome;
      try {
        const result = await handler(params as never, { commandId: command.command_id, signal: controller.signal, emit, docker });
        // Stored as the journal stores it: through JSON.
        outcome = { ok: true, result: JSON.parse(JSON.stringify(result)) as Record<string, unknown> };
      } catch (error) {
        outcome = { ok: false, error: failureOf(error, controller.signal) };
      }
      const events = journal
        .pending(0, 100_000)
        .map(toWireEvent)
        .filter((e) => "command_id" in e && e.command_id === command.command_id);
      return {
        outcome,
        events,
        steps: events.flatMap((e) => (e.kind.startsWith("step.") && "step" in e && e.step !== null ? [{ kind: e.kind, step: e.step }] : [])),
        logs: events.flatMap((e) => (e.kind === "log" ? [{ level: e.level, message: e.message, step: e.step }] : [])),
      };
    },
    async close() {
      journal.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/**
 * The end of a Docker suite: removes what its run made, closes the harness and removes the
 * folders given; throws if anything could not be removed.
 */
export async function finishSuite(suite: string, h: ExecutorHarness, ...dirs: string[]): Promise<void> {
  const problems = await removeTestObjects(suite, h.runId);
  await h.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  if (problems.length > 0) throw new Error(`clean-up left objects behind:\n${problems.join("\n")}`);
}

/** Removes what this run made, by its label, and leftovers of runs of this suite that died over 30 minutes ago. */
export async function removeTestObjects(suite: string, runId: string): Promise<string[]> {
  const Docker = (await import("dockerode")).default;
  const docker = new Docker({ socketPath: DOCKER_SOCKET });
  const problems: string[] = [];
  const cutoff = Date.now() / 1000 - 30 * 60;
  const suiteFilter = { label: [`${SUITE_LABEL}=${suite}`] };
  const mine = (labels: Record<string, string> | undefined, created: number) =>
    labels?.[RUN_LABEL] === runId || created < cutoff;
  const attempt = async (what: string, work: () => Promise<unknown>) => {
    try {
      await work();
    } catch (error) {
      problems.push(`${what}: ${String(error)}`);
    }
  };
  for (const c of await docker.listContainers({ all: true, filters: suiteFilter })) {
    if (mine(c.Labels, c.Created)) await attempt(`container ${c.Names[0]}`, () => docker.getContainer(c.Id).remove({ force: true, v: true }));
  }
  for (const n of await docker.listNetworks({ filters: suiteFilter })) {
    if (mine(n.Labels, Date.parse(n.Created) / 1000)) await attempt(`network ${n.Name}`, () => docker.getNetwork(n.Id).remove());
  }
  const { Volumes } = await docker.listVolumes({ filters: suiteFilter });
  for (const v of Volumes ?? []) {
    const created = Date.parse((v as { CreatedAt?: string }).CreatedAt ?? "") / 1000;
    if (mine(v.Labels, Number.isNaN(created) ? Infinity : created)) await attempt(`volume ${v.Name}`, () => docker.getVolume(v.Name).remove());
  }
  return problems;
}

export function deployParams(environmentId: string, overrides: Partial<DeployParams> = {}): DeployParams {
  return {
    deployment_id: randomUUID(),
    environment_id: environmentId,
    erp_version: "17.0",
    image: ERP_IMAGE,
    db_image: PG_IMAGE,
    git: null,
    resources: { cpu_cores: 1, ram_mb: 512, disk_gb: 5, workers: 0 },
    domain: null,
    env: {},
    proxy: { image: PROXY_IMAGE, acme_ca: null, acme_ca_root: null, acme_email: null },
    ...overrides,
  };
}

/** A bare repository on disk (git init --bare), served over HTTPS, and a way to commit a VERSION file to it. */
export async function createGitRepository(
  dir: string,
): Promise<{ url: string; commit(version: string, files?: Record<string, string | null>): Promise<string> }> {
  const bare = join(dir, "addons.git");
  const work = join(dir, "addons-work");
  const git = async (args: string[], cwd?: string) =>
    (
      await execFileAsync("git", args, {
        ...(cwd === undefined ? {} : { cwd }),
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: "Berth Test",
          GIT_AUTHOR_EMAIL: "test@berth.invalid",
          GIT_COMMITTER_NAME: "Berth Test",
          GIT_COMMITTER_EMAIL: "test@berth.invalid",
        },
      })
    ).stdout.trim();
  await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
  await mkdir(work, { recursive: true });
  await git(["init", "--quiet", "--initial-branch=main"], work);
  await git(["remote", "add", "origin", bare], work);
  return {
    // Served over HTTPS (a test CA): the agent's git clones nothing else but ssh.
    url: (await sharedGitHttpsServer()).url(bare),
    async commit(version, files = {}) {
      await writeFile(join(work, "VERSION"), `${version}\n`);
      // A path may name folders (created); null deletes the file.
      for (const [name, content] of Object.entries(files)) {
        if (content === null) await rm(join(work, name), { force: true });
        else {
          await mkdir(dirname(join(work, name)), { recursive: true });
          await writeFile(join(work, name), content);
        }
      }
      await git(["add", "--all"], work);
      await git(["commit", "--quiet", "-m", `version ${version}`], work);
      await git(["push", "--quiet", "origin", "main"], work);
      return git(["rev-parse", "HEAD"], work);
    },
  };
}

export interface RowsResponse {
  database: string;
  addons_version: string | null;
  filestore_marker: boolean;
  rows: { id: number; note: string }[];
}

export async function rowsOf(port: unknown): Promise<RowsResponse> {
  const response = await fetch(`http://127.0.0.1:${String(port)}/berth/rows`, { signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /berth/rows answered ${response.status}: ${text}`);
  return JSON.parse(text) as RowsResponse;
}

export async function addRow(port: unknown, note: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${String(port)}/berth/rows`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ note }),
    signal: AbortSignal.timeout(10_000),
  });
  if (response.status !== 201) throw new Error(`POST /berth/rows answered ${response.status}: ${await response.text()}`);
}

/**
 * What a production ERP has that a copy must not run or keep, added to what the stand-in's base
 * already has (two active crons, the autovacuum one of them; a production SMTP server;
 * test/images/README.md): two more scheduled actions, another mail server, its own address.
 */
export const PRODUCTION_ONLY_SQL =
  "INSERT INTO ir_cron (cron_name, active) VALUES ('Invoices: send reminders', true), ('Payments: charge cards', true);" +
  "INSERT INTO ir_mail_server (name, smtp_host, active) VALUES ('smtp.customer.example', 'smtp.customer.example', true);" +
  "UPDATE ir_config_parameter SET value = 'https://erp.customer.example' WHERE key = 'web.base.url';";
