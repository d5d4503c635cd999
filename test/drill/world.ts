// Everything a drill run stands up, in order, and tears down again whatever happened: its
// PostgreSQL, three control-plane replicas, HAProxy in front of them, the organisations (one
// per agent), the simulated agents, the probes (one simulated agent held by each replica
// directly, which tells the drill each replica's id), the real agents (on the host, inside a
// network namespace, one for the clock skew), the API clients (one per simulated agent's
// organisation, and one per host agent's, whose deploys and restarts run in Docker) and the
// SSE subscribers.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, type DbHandle } from "@berth/db";
import { createDemoOrganization, createServices, systemClock, type DemoOrganization, type Services } from "@berth/control-plane";
import { freePort } from "../setup/global-setup.ts";
import { agentJournal } from "./agent-journal.ts";
import { ApiClient } from "./api-clients.ts";
import { startHaproxy, type Haproxy } from "./haproxy.ts";
import { Ledger } from "./ledger.ts";
import { createNetns, type Netns } from "./netns.ts";
import { startDrillPostgres, type DrillPostgres } from "./postgres.ts";
import { DrillRealAgent } from "./real-agent.ts";
import { makeReplica, type Replica } from "./replicas.ts";
import type { DrillSettings } from "./settings.ts";
import { DrillSimAgent } from "./sim-agent.ts";
import { SseSubscriber } from "./sse-subscriber.ts";
import { removeEnvironmentObjects, TEST_IMAGES } from "../support/real-agent.ts";

export type RealRole = "host" | "netns" | "skew";

export interface RealAgent {
  agent: DrillRealAgent;
  org: DemoOrganization;
  role: RealRole;
  /** The environment its API client deploys (host agents): ERP 17.0, no Git repository (nothing outside this machine). */
  environmentId: string;
}

export interface SimEntry {
  sim: DrillSimAgent;
  org: DemoOrganization;
}

export interface OverflowAgent extends SimEntry {
  journal: ReturnType<typeof agentJournal>;
}

export interface IssuedCommand {
  commandId: string;
  serverId: string;
  at: number;
}

export interface World {
  settings: DrillSettings;
  logDir: string;
  ledger: Ledger;
  pg: DrillPostgres;
  replicas: Replica[];
  haproxy: Haproxy;
  netns: Netns | null;
  handle: DbHandle;
  services: Services;
  sims: SimEntry[];
  probes: DrillSimAgent[];
  /** The simulated agent on the real agent journal with a small bound (journal_overflow). */
  overflow: OverflowAgent | null;
  reals: RealAgent[];
  clients: ApiClient[];
  subscribers: SseSubscriber[];
  /** Diagnostics the drill issued to the real agents. */
  issued: IssuedCommand[];
  /** Issue calls that failed (the drill's own writes, e.g. while PostgreSQL was down). */
  issueFailures: number;
  log(line: string): void;
  /** Every agent (probes included) not connected after up to `ms` (agentsAway). */
  away(ms: number): Promise<string[]>;
  /** Every agent the figures count (not the probes). */
  agentServerIds(): string[];
  serverRole(serverId: string): string;
  issueDiagnostics(serverId: string, organizationId: string): Promise<void>;
  /** Restarts any replica that is not running; names the ones that had exited. */
  reviveReplicas(): Promise<number[]>;
  stopTraffic(): Promise<void>;
  teardown(): Promise<void>;
}

/**
 * The agents not connected after up to `ms` (none once all are): connected is a session row
 * on the control plane and, for the simulated ones, their own socket open.
 */
async function agentsAway(ledger: Ledger, serverIds: string[], sims: DrillSimAgent[], ms: number): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const sessions = await ledger.sessions().catch(() => null);
    const away = new Set(sessions ? serverIds.filter((id) => !sessions.has(id)) : serverIds);
    for (const s of sims) if (!s.connected) away.add(s.serverId);
    if (away.size === 0 || Date.now() >= deadline) return [...away];
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function buildWorld(settings: DrillSettings, log: (line: string) => void): Promise<World> {
  const logDir = settings.logDir ?? (await mkdtemp(path.join(os.tmpdir(), "berth-drill-logs-")));
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "berth-drill-data-"));
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dataDir, { recursive: true, force: true })];
  // Interrupted (Ctrl-C, a CI timeout), the drill still removes its namespace and processes.
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: tearing down`);
    void teardown().finally(() => process.exit(130));
  };
  const teardown = async () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup: ${(err as Error).message}`));
    cleanups.length = 0;
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    log(`logs: ${logDir}`);
    const pg = await startDrillPostgres();
    cleanups.push(() => pg.stop());
    const ledger = new Ledger(pg.url);
    cleanups.push(() => ledger.close());
    const masterKey = randomBytes(32);
    const replicas: Replica[] = [];
    for (let i = 0; i < 3; i++) replicas.push(await makeReplica(i, { databaseUrl: pg.url, masterKey, dataDir, logDir, drain: { settleMs: settings.drainSettleMs, handoverMs: settings.drainHandoverMs } }));
    cleanups.push(() => Promise.all(replicas.map((r) => r.stop("SIGKILL"))));
    // The first replica migrates the database; the others start on it.
    await replicas[0]!.start();
    await Promise.all(replicas.slice(1).map((r) => r.start()));
    log(`replicas on ports ${replicas.map((r) => r.port).join(", ")}`);

    const wantNetns = settings.faults.includes("net_cut");
    const netns = wantNetns ? await createNetns() : null;
    if (netns) cleanups.push(() => netns.remove());
    const haproxy = await startHaproxy({ port: await freePort(), extraBinds: netns ? [netns.hostAddress] : [], replicaPorts: replicas.map((r) => r.port), dir: logDir });
    cleanups.push(() => haproxy.stop());
    log(`haproxy at ${haproxy.url}`);

    const handle = createDb(pg.url, { max: 4 });
    cleanups.push(() => handle.close());
    const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: "berth-drill", masterKey });
    // The host agents deploy for real: Docker, with the images test/images/build.sh made.
    await services.images.set(TEST_IMAGES);
    const newOrg = (name: string) => createDemoOrganization(handle.db, services, { name });
    const token = async (org: DemoOrganization) => (await services.enrollment.newToken(org.organization_id, org.server_id, null)).token;

    const sims: SimEntry[] = [];
    for (let i = 0; i < settings.sims; i++) {
      const org = await newOrg(`Drill sim ${i + 1}`);
      const sim = new DrillSimAgent({ url: haproxy.url, token: await token(org), logEveryMs: 1000 });
      await sim.enroll();
      sims.push({ sim, org });
    }
    const probes: DrillSimAgent[] = [];
    for (const r of replicas) {
      const org = await newOrg(`Drill probe ${r.index}`);
      const probe = new DrillSimAgent({ url: haproxy.url, connectUrl: `http://127.0.0.1:${r.port}`, token: await token(org), logEveryMs: 0 });
      await probe.enroll();
      probes.push(probe);
    }
    let overflow: OverflowAgent | null = null;
    if (settings.faults.includes("journal_overflow")) {
      const org = await newOrg("Drill journal overflow");
      const journal = agentJournal(settings.journalBound);
      cleanups.push(async () => journal.close());
      const sim = new DrillSimAgent({ url: haproxy.url, token: await token(org), logEveryMs: 0, journal });
      await sim.enroll();
      overflow = { sim, org, journal };
    }
    cleanups.push(async () => {
      for (const s of [...sims.map((e) => e.sim), ...probes, ...(overflow ? [overflow.sim] : [])]) s.stop();
    });

    const reals: RealAgent[] = [];
    // Run after the agents are killed (cleanups run last first), so none recreates what goes.
    cleanups.push(() => removeEnvironmentObjects(reals.map((r) => r.environmentId)));
    cleanups.push(() => Promise.all(reals.map((r) => r.agent.cleanup())));
    const roles: RealRole[] = [...Array.from({ length: settings.realAgents }, () => "host" as const)];
    if (netns) roles.push("netns");
    if (settings.faults.includes("clock_skew")) roles.push("skew");
    for (const [i, role] of roles.entries()) {
      const org = await newOrg(`Drill real ${role} ${i + 1}`);
      const agent = await DrillRealAgent.create(`${role}${i}`, logDir);
      const url = role === "netns" && netns ? `http://${netns.hostAddress}:${new URL(haproxy.url).port}` : haproxy.url;
      await agent.enroll(url, await token(org), org.server_id);
      agent.start(role === "netns" && netns ? { prefix: netns.prefix } : {});
      const scope = { organizationId: org.organization_id, projectId: null };
      const project = await services.projects.create(scope, { name: `Drill shop ${i + 1}`, server_id: org.server_id, erp_version: "17.0" });
      const environmentId = (await services.environments.create(scope, { project_id: project.id, name: "production", cpu_cores: 1, ram_mb: 1024 })).id;
      reals.push({ agent, org, role, environmentId });
    }

    const simulated = [...sims.map((e) => e.sim), ...probes, ...(overflow ? [overflow.sim] : [])];
    for (const s of simulated) s.start();
    const everyone = [...sims.map((e) => e.org.server_id), ...probes.map((p) => p.serverId), ...reals.map((r) => r.org.server_id), ...(overflow ? [overflow.org.server_id] : [])];
    const away = await agentsAway(ledger, everyone, simulated, 120_000);
    if (away.length > 0) throw new Error(`timed out waiting for every agent connected (${away.length} not)`);
    log(`${sims.length} simulated agents, ${reals.length} real agents (${roles.join(", ")}), ${probes.length} probes connected`);

    // One restart every clients/apiRatePerS seconds per organisation (the fleet's rate), at
    // most one every 4 s: a full-access key may make 20 requests a minute.
    const pauseMs = Math.max(4000, (1000 * Math.max(1, sims.length)) / Math.max(0.1, settings.apiRatePerS));
    const clientOf = (org: DemoOrganization, environmentId: string, deployFirst = false) =>
      new ApiClient(haproxy.url, { organizationId: org.organization_id, environmentId, apiKey: org.api_keys.org_rw, readKey: org.api_keys.org_ro }, pauseMs, deployFirst);
    // Each host agent's environment is deployed, restarted and redeployed in Docker through the faults.
    const deployers = reals.filter((r) => r.role === "host");
    const clients = [...sims.map((e) => clientOf(e.org, e.org.environments.running)), ...deployers.map((r) => clientOf(r.org, r.environmentId, true))];
    const subscribers = sims.slice(0, Math.min(3, sims.length)).map((e) => new SseSubscriber(haproxy.url, e.org.organization_id, e.org.api_keys.org_ro));
    for (const s of subscribers) s.start();
    for (const c of clients) c.start();

    const issued: IssuedCommand[] = [];
    const roleOf = new Map<string, string>([
      ...sims.map((e) => [e.org.server_id, "sim"] as const),
      ...reals.map((r) => [r.org.server_id, `real:${r.role}`] as const),
      ...(overflow ? [[overflow.org.server_id, "overflow"] as const] : []),
    ]);
    const world: World = {
      settings,
      logDir,
      ledger,
      pg,
      replicas,
      haproxy,
      netns,
      handle,
      services,
      sims,
      probes,
      overflow,
      reals,
      clients,
      subscribers,
      issued,
      issueFailures: 0,
      log,
      away: (ms) => agentsAway(ledger, everyone, simulated, ms),
      agentServerIds: () => [...sims.map((e) => e.org.server_id), ...reals.map((r) => r.org.server_id), ...(overflow ? [overflow.org.server_id] : [])],
      serverRole: (id) => roleOf.get(id) ?? "probe",
      async issueDiagnostics(serverId, organizationId) {
        try {
          const row = await services.agentCommands.issue({ organizationId, serverId, type: "diagnostics", params: {}, issuedBy: "system:failover-drill" });
          issued.push({ commandId: row.commandId, serverId, at: Date.now() });
        } catch {
          world.issueFailures++;
        }
      },
      async reviveReplicas() {
        const dead = replicas.filter((r) => !r.running);
        for (const r of dead) await r.start();
        return dead.map((r) => r.index);
      },
      async stopTraffic() {
        await Promise.all(clients.map((c) => c.stop()));
      },
      teardown,
    };
    return world;
  } catch (err) {
    await teardown();
    throw err;
  }
}
