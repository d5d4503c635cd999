// The agent executable in an end-to-end test: a real control plane that listens, a demo
// organisation, and the executable copied alone into a temp directory, run (directly or
// through a launcher such as qemu-user) with only the environment the test gives it.
// agent-binary.e2e.test.ts and agent-binary-arm64.e2e.test.ts share it.
import { execFile, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "./control-plane.ts";
import { publicClient } from "./http.ts";
import { RunningAgent } from "./running-agent.ts";

const execFileAsync = promisify(execFile);

export interface DiagnosticsRow {
  state: string;
  result: Record<string, unknown> | null;
  error: unknown;
}

export interface ExecutableUnderTest {
  cp: TestControlPlane;
  /** The control plane's http://127.0.0.1:<port>. */
  base: string;
  d: DemoOrganization;
  /** The temp directory holding only the executable (and what the test adds). */
  dir: string;
  bin: string;
  /** Runs the executable to completion in `dir` with the test's environment plus `env`. */
  run(args: string[], env?: Record<string, string>): Promise<{ stdout: string; stderr: string }>;
  /** Starts `berth-agent run --state-dir <stateDir>`. */
  daemon(stateDir: string): RunningAgent;
  /** A new server with its one-time enrolment token. */
  newServer(name: string): Promise<{ serverId: string; token: string }>;
  /** Issues `diagnostics` to the server and waits for it to finish; the command's row. */
  diagnostics(serverId: string, daemon: RunningAgent, timeoutMs?: number): Promise<DiagnosticsRow>;
  close(): Promise<void>;
}

export async function executableUnderTest(
  file: string,
  opts: { tmpPrefix: string; env: () => Record<string, string>; launcher?: string[]; dirMode?: number },
): Promise<ExecutableUnderTest> {
  const cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  const address = cp.app.server.address();
  if (address === null || typeof address !== "object") throw new Error("control plane not listening");
  const base = `http://127.0.0.1:${address.port}`;
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const dir = mkdtempSync(path.join(tmpdir(), opts.tmpPrefix));
  if (opts.dirMode !== undefined) chmodSync(dir, opts.dirMode);
  const bin = path.join(dir, "berth-agent");
  copyFileSync(file, bin);
  chmodSync(bin, 0o755);
  const [launcher, ...launcherArgs] = opts.launcher ?? [];
  const command = (args: string[]): [string, string[]] => (launcher ? [launcher, [...launcherArgs, bin, ...args]] : [bin, args]);
  const agents: RunningAgent[] = [];

  return {
    cp,
    base,
    d,
    dir,
    bin,
    run: (args, env = {}) => {
      const [cmd, argv] = command(args);
      return execFileAsync(cmd, argv, { cwd: dir, env: { ...opts.env(), ...env }, timeout: 120_000 });
    },
    daemon: (stateDir) => {
      const [cmd, argv] = command(["run", "--state-dir", stateDir]);
      const daemon = new RunningAgent(spawn(cmd, argv, { cwd: dir, env: opts.env(), stdio: ["ignore", "pipe", "pipe"] }));
      agents.push(daemon);
      return daemon;
    },
    newServer: async (name) => {
      const created = await publicClient(cp.app, d.api_keys.org_rw).post("/servers", { name });
      if (created.status !== 201) throw new Error(`POST /servers answered ${created.status}: ${JSON.stringify(created.body)}`);
      return { serverId: created.body.server.id as string, token: created.body.enrollment.token as string };
    },
    diagnostics: async (serverId, daemon, timeoutMs = 30_000) => {
      const command = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:e2e" });
      const row = async () =>
        (await cp.database.pool.query<DiagnosticsRow>("select state, result, error from agent_commands where command_id = $1", [command.commandId])).rows[0]!;
      await daemon.waitFor("diagnostics to finish", async () => ["succeeded", "failed"].includes((await row()).state), timeoutMs);
      return row();
    },
    close: async () => {
      await Promise.all(agents.map((agent) => agent.stop()));
      await cp.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
