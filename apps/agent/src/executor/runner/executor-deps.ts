// What the environment handlers (deploy ... restore) share: where state lives, the clock,
// the per-environment lock, and how long each wait and step may take.
import type { Clock } from "../../clock.ts";
import type { ReverseProxy } from "../../proxy/reverse-proxy.ts";
import type { EnvironmentLocks } from "./environment-lock.ts";
import type { StepDeadlines } from "./step-runner.ts";

export interface ExecutorTiming {
  /** How long the ERP may take to serve its login page (health-check.ts) before the check gives up. */
  healthTimeoutMs: number;
  healthIntervalMs: number;
  /** How long PostgreSQL may take to accept connections (first start runs initdb). */
  dbReadyTimeoutMs: number;
  /** Deadline of each git invocation. */
  gitTimeoutMs: number;
  /** SIGTERM grace before Docker kills a stopping container. */
  stopGraceSeconds: number;
  /** Deadline of a database dump or restore, and of a file store copy. */
  dataTransferMs: number;
  /** Deadline of a new database's initialisation (odoo -i base --stop-after-init). */
  erpInitTimeoutMs: number;
  /** Deadline of a deploy's module installs and upgrades (--stop-after-init). */
  moduleUpdateTimeoutMs: number;
  /** Per-step deadlines, by operation; unset steps get DEFAULT_STEP_DEADLINE_MS. */
  steps: {
    deploy: StepDeadlines;
    lifecycle: StepDeadlines;
    destroy: StepDeadlines;
    backup: StepDeadlines;
    restore: StepDeadlines;
  };
}

const MINUTE = 60_000;

export const DEFAULT_TIMING: ExecutorTiming = {
  healthTimeoutMs: 30_000,
  healthIntervalMs: 1_000,
  dbReadyTimeoutMs: 90_000,
  gitTimeoutMs: 10 * MINUTE,
  stopGraceSeconds: 20,
  dataTransferMs: 60 * MINUTE,
  erpInitTimeoutMs: 20 * MINUTE,
  moduleUpdateTimeoutMs: 60 * MINUTE,
  steps: {
    deploy: {
      initializing: 30_000,
      connecting: 15_000,
      creating_network: MINUTE,
      configuring_dns: 30_000,
      // May pull the PostgreSQL image.
      creating_postgres: 20 * MINUTE,
      cloning_platform_repos: 10 * MINUTE,
      cloning_org_repos: 10 * MINUTE,
      cloning_repo: 15 * MINUTE,
      pulling_image: 20 * MINUTE,
      generating_config: 30_000,
      // Initialises a new database (or restores a migration's backup), or snapshots and
      // upgrades modules, before the switch (erpInitTimeoutMs, dataTransferMs,
      // moduleUpdateTimeoutMs), and may roll back.
      starting_container: 3 * 60 * MINUTE,
      installing_dependencies: 15 * MINUTE,
      initializing_database: 30_000,
      verifying_dns: 30_000,
      // May pull the proxy's image, then waits for a new certificate (BERTH_CERTIFICATE_WAIT).
      configuring_traefik: 20 * MINUTE,
      // An unhealthy ERP after a module upgrade is rolled back to the snapshot here.
      health_check: 90 * MINUTE,
      completed: 5 * MINUTE,
    },
    lifecycle: { initializing: 30_000, connecting: 15_000, starting_container: 5 * MINUTE, health_check: 2 * MINUTE, completed: 2 * MINUTE },
    destroy: { initializing: 30_000, connecting: 15_000, completed: 10 * MINUTE },
    backup: { initializing: 30_000, connecting: 15_000, completed: 2 * 60 * MINUTE },
    restore: {
      // May fetch the backup from the control plane's store first.
      initializing: 2 * 60 * MINUTE,
      connecting: 15_000,
      initializing_database: 2 * 60 * MINUTE,
      starting_container: 60 * MINUTE,
      health_check: 2 * MINUTE,
      completed: 10_000,
    },
  },
};

export interface ExecutorDeps {
  stateDir: string;
  clock: Clock;
  locks: EnvironmentLocks;
  /** The server's reverse proxy: routes, maintenance pages, certificates. */
  proxy: ReverseProxy;
  /** Extra labels on every object created (tests mark theirs); never replaces Berth's own. */
  extraLabels?: Readonly<Record<string, string>>;
  timing?: TimingOverrides;
  /** Read at each deploy. */
  preDeploy?: PreDeploySettings;
  /** The control plane's URL (http base, no trailing slash): backups are uploaded to and fetched from paths on it. */
  controlPlaneUrl?: string;
  /** How many backups uploaded to the control plane an environment keeps on this server too (default 2). */
  backupsKeptLocally?: number;
  /** The server's mail catcher (mail/): where staging and development ERPs send mail; absent: none runs. */
  mail?: MailCatcherAddress;
}

export interface MailCatcherAddress {
  /** Null while the catcher is not listening. */
  address(): { host: string; port: number } | null;
}

/** Uploaded backups an environment keeps on its server for fast restores (the store has them all). */
export const DEFAULT_BACKUPS_KEPT_LOCALLY = 2;

export interface PreDeploySettings {
  /** How many pre-deploy snapshots an environment keeps (default 3). */
  retention?: number;
  /** false: no pre-deploy snapshot, hence no rollback (only for measuring what a snapshot costs). Default true. */
  snapshots?: boolean;
}

/** Any figure may be overridden; a step deadline given replaces only that step's. */
export type TimingOverrides = Partial<Omit<ExecutorTiming, "steps">> & {
  steps?: { [K in keyof ExecutorTiming["steps"]]?: StepDeadlines };
};

export function timingOf(deps: ExecutorDeps): ExecutorTiming {
  const steps = { ...DEFAULT_TIMING.steps };
  for (const kind of Object.keys(steps) as (keyof ExecutorTiming["steps"])[]) {
    steps[kind] = { ...DEFAULT_TIMING.steps[kind], ...deps.timing?.steps?.[kind] };
  }
  return { ...DEFAULT_TIMING, ...deps.timing, steps };
}
