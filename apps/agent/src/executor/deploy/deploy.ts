// deploy and redeploy: the 17 steps of platform spec 2.2 with real Docker objects. The
// database volume and the data dir are created once and kept by every later deploy; the
// ERP container is replaced. The final health check is non-fatal (spec 4.1 rule 7).
import { chown, chmod, mkdir, readFile } from "node:fs/promises";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentLabels, isEnvironmentObject } from "../../docker/labels.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE, STATE_DIR_MODE } from "../../state/state-dir.ts";
import {
  DEFAULT_DB_IMAGE,
  ERP_DB_NAME,
  ERP_DB_PORT,
  ERP_DB_USER,
  ERP_HTTP_PORT,
  ERP_UID,
  environmentLayout,
  type EnvironmentLayout,
} from "../environment/environment-layout.ts";
import { ensureImage, hostPortOf, replaceErpContainer } from "../environment/erp-container.ts";
import { renderOdooConf, sizeErp, type ErpSizing } from "./erp-config.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import { checkoutRepository, emptyCheckout, redactUrl } from "./git-checkout.ts";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";
import { checkHealth } from "../environment/health-check.ts";
import { ensurePostgres } from "../environment/postgres.ts";
import { runSteps, type StepScope } from "../runner/step-runner.ts";
import { mayCertify, recordsToCreate, type DnsAnswer } from "../../proxy/dns-check.ts";

interface DeployState {
  layout: EnvironmentLayout;
  sizing: ErpSizing;
  dbPassword: string;
  databaseIsNew: boolean;
  commit: string | null;
  hasRequirements: boolean;
  containerId: string;
  hostPort: number | null;
  healthy: boolean;
  /** verifying_dns's answer per routed name. */
  dns: Record<string, DnsAnswer>;
}

export function createDeployHandler(deps: ExecutorDeps, kind: "deploy" | "redeploy"): CommandHandler<"deploy" | "redeploy"> {
  const timing = timingOf(deps);
  const extraLabels = deps.extraLabels ?? {};

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, kind, async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const dbImage = params.db_image ?? DEFAULT_DB_IMAGE;
      const s: Partial<DeployState> & Pick<DeployState, "layout" | "dns"> = { layout, commit: null, hasRequirements: false, dns: {} };
      const names = params.domain === null ? [] : [params.domain, ...(params.aliases ?? []).filter((a) => a !== params.domain)];

      await runSteps(
        kind,
        ctx,
        {
          initializing: async (step) => {
            step.log("info", `${kind === "redeploy" ? "Redeploying" : "Deploying"} ERP ${params.erp_version} (${params.image})`, {
              environment_id: params.environment_id,
              image: params.image,
              db_image: dbImage,
              resources: params.resources,
              git: params.git === null ? null : { url: redactUrl(params.git.url), branch: params.git.branch, commit: params.git.commit },
              domain: params.domain,
              // Values may be secrets: only the names are logged.
              env_names: Object.keys(params.env).sort(),
            });
            s.sizing = sizeErp(params.resources);
            for (const warning of s.sizing.warnings) step.log("warning", `Sizing: ${warning}`);
            await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
            await prepareDataDir(layout.dataDir, step);
            return `Environment ${params.environment_id} prepared`;
          },

          connecting: async () => {
            const version = await docker.version();
            return `Docker ${version.version} (API ${version.api_version}) reachable`;
          },

          creating_network: async (step) => {
            const existing = await docker.findNetwork(layout.network);
            if (existing !== null) {
              if (!isEnvironmentObject(existing.labels, layout.environmentId)) {
                throw new CommandError("name_conflict", `network ${layout.network} exists but is not this environment's: Berth leaves it alone`);
              }
              return `Network ${layout.network} exists`;
            }
            await docker.createNetwork(layout.network, environmentLabels(layout.environmentId, "network", extraLabels));
            step.log("info", `Created isolated bridge network ${layout.network}`);
            return `Network ${layout.network} created`;
          },

          configuring_dns: async (step) => {
            if (names.length === 0) {
              step.log("info", "No domain: nothing to point at this server");
              return "No domain";
            }
            const expected = deps.proxy.publicAddresses();
            if (expected.length === 0) {
              step.log("warning", `This server's public address is not known (set BERTH_PUBLIC_ADDRESSES on the agent): point ${names.join(", ")} at it`);
              return "Public address unknown";
            }
            step.log("info", `Point ${names.join(", ")} at this server: ${names.map((n) => recordsToCreate(n, expected)).join("; ")}`, {
              names,
              public_addresses: expected,
            });
            return `${names.length === 1 ? names[0] : `${names.length} names`} must point to ${expected.join(", ")}`;
          },

          creating_postgres: async (step) => {
            const db = await ensurePostgres(docker, layout, step, {
              image: dbImage,
              extraLabels,
              readyTimeoutMs: timing.dbReadyTimeoutMs,
              clock: deps.clock,
            });
            s.databaseIsNew = db.volumeCreated;
            return `PostgreSQL ${layout.dbContainer} accepts connections`;
          },

          cloning_platform_repos: async (step) => {
            step.log("info", "No platform repositories configured");
            return "None configured";
          },

          cloning_org_repos: async (step) => {
            step.log("info", "No organisation repositories configured");
            return "None configured";
          },

          cloning_repo: async (step) => {
            if (params.git === null) {
              await emptyCheckout(layout.addonsDir, (dir) => mkdir(dir, { mode: 0o755 }).then(() => undefined));
              step.log("info", "No repository configured: the image runs as is (skipped)");
              return "Skipped: no repository";
            }
            const url = redactUrl(params.git.url);
            step.log("info", `Cloning ${url} (branch ${params.git.branch}${params.git.commit ? `, commit ${params.git.commit}` : ""})`);
            const checkout = await checkoutRepository(params.git, layout.addonsDir, {
              signal: step.signal,
              timeoutMs: timing.gitTimeoutMs,
            });
            s.commit = checkout.commit;
            s.hasRequirements = checkout.hasRequirements;
            step.log("info", `Checked out commit ${checkout.commit}`, { commit: checkout.commit, branch: params.git.branch });
            return `Commit ${checkout.commit}`;
          },

          pulling_image: async (step) => {
            const source = await ensureImage(docker, params.image, step);
            return source === "local" ? `Using local image ${params.image}` : `Pulled ${params.image}`;
          },

          generating_config: async (step) => {
            const sizing = need(s.sizing);
            s.dbPassword = await readPassword(layout);
            const conf = renderOdooConf({
              dbHost: layout.dbContainer,
              dbPort: ERP_DB_PORT,
              dbUser: ERP_DB_USER,
              dbPassword: s.dbPassword,
              dbName: ERP_DB_NAME,
              sizing,
              proxyMode: params.domain !== null,
            });
            writeFileAtomic(layout.configFile, conf, SECRET_FILE_MODE);
            await readableByErp(layout.configFile, step);
            step.log("info", `Wrote ${layout.configFile}`, {
              workers: sizing.workers,
              limit_memory_soft: sizing.limit_memory_soft,
              limit_memory_hard: sizing.limit_memory_hard,
              db_host: layout.dbContainer,
            });
            return `odoo.conf written (workers ${sizing.workers})`;
          },

          starting_container: async (step) => {
            const sizing = need(s.sizing);
            s.containerId = await replaceErpContainer(
              docker,
              layout,
              {
                name: layout.erpContainer,
                image: params.image,
                labels: environmentLabels(layout.environmentId, "erp", {
                  ...extraLabels,
                  "berth.deployment_id": params.deployment_id,
                  "berth.erp_version": params.erp_version,
                }),
                env: Object.entries(params.env).map(([name, value]) => `${name}=${value}`),
                network: layout.network,
                binds: [
                  `${layout.configFile}:/etc/odoo/odoo.conf:ro`,
                  `${layout.dataDir}:/var/lib/odoo`,
                  `${layout.addonsDir}:/mnt/extra-addons:ro`,
                ],
                publishLoopback: [ERP_HTTP_PORT],
                nanoCpus: sizing.nano_cpus,
                memoryBytes: sizing.memory_bytes,
                restartPolicy: "unless-stopped",
              },
              step,
              { graceSeconds: timing.stopGraceSeconds, suffix: params.deployment_id.slice(0, 8) },
            );
            s.hostPort = await hostPortOf(docker, s.containerId);
            return `ERP container ${layout.erpContainer} started; port 8069 on 127.0.0.1:${s.hostPort ?? "?"}`;
          },

          installing_dependencies: async (step) => {
            if (!s.hasRequirements) {
              step.log("info", "No requirements.txt in the repository: nothing to install");
              return "Nothing to install";
            }
            return installRequirements(docker, need(s.containerId), step, timing.dataTransferMs).then(async (message) => {
              if (message.restarted) s.hostPort = await hostPortOf(docker, need(s.containerId));
              return message.text;
            });
          },

          initializing_database: async (step) => {
            if (s.databaseIsNew === true) {
              step.log("info", `New database: the ERP creates "${ERP_DB_NAME}" on its first start`);
              return "New database";
            }
            step.log("info", "Existing database kept (volume reused): nothing to initialise");
            return "Existing database kept";
          },

          verifying_dns: async (step) => {
            if (names.length === 0) {
              step.log("info", "No domain: nothing to verify");
              return "No domain";
            }
            let elsewhere = 0;
            for (const name of names) {
              const answer = await deps.proxy.dns.check(name);
              s.dns[name] = answer;
              const records = recordsToCreate(name, answer.expected);
              if (answer.status === "ok") step.log("info", `${name} resolves to ${answer.resolved.join(", ")}: this server`);
              else if (answer.status === "unchecked") {
                step.log("info", `${name} resolves to ${answer.resolved.join(", ")}; this server's public address is unknown, so the certificate is requested anyway`);
              } else {
                elsewhere += 1;
                const found = answer.status === "unresolved" ? "has no DNS record" : `resolves to ${answer.resolved.join(", ")}, not to this server`;
                step.log("warning", `${name} ${found}: create ${records}. No certificate is requested for it until it points here; Berth checks again every few minutes`, {
                  name,
                  resolved: answer.resolved,
                  expected: answer.expected,
                });
              }
            }
            return elsewhere === 0 ? "DNS points here" : `${elsewhere} of ${names.length} name(s) do not point here (warning)`;
          },

          configuring_traefik: async (step) => {
            const log = (level: "info" | "warning", message: string) => step.log(level, message);
            if (names.length === 0) {
              const removed = await deps.proxy.remove(docker, layout.environmentId, log);
              step.log("info", removed ? "No domain any more: the environment's route was removed" : "No domain: not routed");
              if (removed) await deps.proxy.report(docker, { force: true });
              return removed ? "Route removed" : "Skipped: no domain";
            }
            const gevent = need(s.sizing).workers > 0;
            await deps.proxy.route(
              docker,
              { environmentId: layout.environmentId, names, upstream: layout.erpContainer, network: layout.network, gevent, dns: s.dns },
              params.proxy,
              log,
            );
            step.log(
              "info",
              `Routing ${names.map((n) => `https://${n}`).join(", ")} to ${layout.erpContainer}:8069${gevent ? " (/websocket and /longpolling to 8072)" : ""}`,
            );
            const certify = names.filter((n) => mayCertify(s.dns[n] ?? { status: "unchecked" }));
            const statuses = await deps.proxy.awaitCertificates(docker, certify, deps.proxy.host.certificateWaitMs, step.signal);
            for (const [name, cert] of statuses) {
              if (cert.status === "valid") step.log("info", `Certificate for ${name} valid until ${cert.not_after} (${cert.issuer})`);
              else if (cert.status === "error") step.log("warning", `No certificate for ${name} yet: ${cert.error}; the proxy keeps trying`);
              else step.log("info", `The certificate for ${name} is being requested; the proxy serves it as soon as the CA issues it`);
            }
            await deps.proxy.report(docker, { force: true });
            const valid = [...statuses.values()].filter((c) => c.status === "valid").length;
            return `Routing ${names[0]}; ${valid} of ${names.length} certificate(s) valid`;
          },

          health_check: async (step) => {
            s.healthy = await checkHealth(docker, need(s.containerId), s.hostPort ?? null, step, deps.clock, timing);
            return s.healthy ? "ERP healthy" : "ERP not healthy (non-fatal)";
          },

          completed: async (step) => {
            step.log("info", `${kind === "redeploy" ? "Redeployment" : "Deployment"} finished`);
            return "Done";
          },
        },
        timing.steps.deploy,
      );

      return {
        container_id: need(s.containerId),
        container_name: layout.erpContainer,
        image: params.image,
        host_port: s.hostPort ?? null,
        commit: s.commit ?? null,
        db_volume: layout.dbVolume,
        db_container: layout.dbContainer,
        healthy: s.healthy ?? false,
        urls: names.map((n) => `https://${n}`),
      };
    });
}

function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("a step ran before the step that prepares its input");
  return value;
}

async function readPassword(layout: EnvironmentLayout): Promise<string> {
  return (await readFile(layout.dbPasswordFile, "utf8")).trim();
}

/** The data dir belongs to the ERP's user, as /var/lib/odoo does in the official image. */
async function prepareDataDir(dir: string, step: StepScope): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o750 });
  try {
    await chown(dir, ERP_UID, ERP_UID);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
    step.log("warning", `Cannot give ${dir} to the ERP's user (uid ${ERP_UID}) without root: the file store may not be writable`);
  }
}

/** odoo.conf holds the database password: owned by the ERP's user, 0600; world-readable only without root. */
async function readableByErp(file: string, step: StepScope): Promise<void> {
  try {
    await chown(file, ERP_UID, ERP_UID);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
    await chmod(file, 0o644);
    step.log("warning", `Without root the agent cannot give ${file} to uid ${ERP_UID}: made it readable (0644) inside the private state dir`);
  }
}

async function installRequirements(
  docker: DockerClient,
  containerId: string,
  step: StepScope,
  deadlineMs: number,
): Promise<{ text: string; restarted: boolean }> {
  const requirements = "/mnt/extra-addons/requirements.txt";
  step.log("info", "requirements.txt found: installing it with pip inside the ERP container");
  let pip: string | null = null;
  for (const candidate of ["pip3", "pip"]) {
    const probe = await docker.exec(containerId, [candidate, "--version"], { deadlineMs: 15_000 }).catch(() => null);
    if (probe?.exitCode === 0) {
      pip = candidate;
      break;
    }
  }
  if (pip === null) {
    step.log("warning", "The image has no pip: requirements.txt was not installed (non-fatal)");
    return { text: "Not installed: no pip in the image", restarted: false };
  }
  // --user installs under the ERP user's home (/var/lib/odoo in the official image, the data dir).
  const result = await docker.exec(containerId, [pip, "install", "--user", "--no-cache-dir", "-r", requirements], { deadlineMs });
  if (result.exitCode !== 0) {
    const tail = result.stderr.trim().split("\n").slice(-5).join("\n");
    step.log("warning", `pip install -r requirements.txt failed (exit code ${result.exitCode}), continuing (non-fatal): ${tail}`);
    return { text: "pip install failed (non-fatal)", restarted: false };
  }
  step.log("info", "Installed requirements.txt; restarting the ERP so it loads them");
  await docker.restartContainer(containerId, 20);
  return { text: "Requirements installed", restarted: true };
}
