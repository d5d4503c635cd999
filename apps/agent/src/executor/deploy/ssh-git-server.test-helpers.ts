// A private Git host for tests: OpenSSH's sshd on 127.0.0.1 (a free port) with its own host
// key, configuration and authorized_keys in a temporary folder (nothing of ~/.ssh is read or
// written), serving bare repositories to whoever holds an authorised key. Needs root (sshd
// logs the client in as the user running the tests) and Debian's openssh-server.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, connect } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
export const SSHD = "/usr/sbin/sshd";

export function sshdMissing(): string | null {
  if (!existsSync(SSHD)) return `${SSHD} is missing: apt-get install -y openssh-server`;
  if (process.getuid?.() !== 0) return "sshd tests need root";
  return null;
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: "Berth Test",
  GIT_AUTHOR_EMAIL: "test@berth.invalid",
  GIT_COMMITTER_NAME: "Berth Test",
  GIT_COMMITTER_EMAIL: "test@berth.invalid",
  // Submodules from the local work trees of this helper (never from an agent's clone).
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: "protocol.file.allow",
  GIT_CONFIG_VALUE_0: "always",
};

export async function git(args: string[], cwd?: string): Promise<string> {
  const { stdout } = await execFileAsync("git", args, { ...(cwd === undefined ? {} : { cwd }), env: { ...process.env, ...GIT_ENV } });
  return stdout.trim();
}

/** An ed25519 key pair made with ssh-keygen: the OpenSSH private key and the public line. */
export async function sshKeyPair(dir: string, name: string): Promise<{ privateKey: string; publicKey: string }> {
  const file = join(dir, name);
  await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", file]);
  return { privateKey: await readFile(file, "utf8"), publicKey: (await readFile(`${file}.pub`, "utf8")).trim() };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function bannerOf(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.setTimeout(1000);
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("SSH-"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export interface SshGitServer {
  port: number;
  dir: string;
  /** ssh://<user>@127.0.0.1:<port>/<dir>/<name>.git */
  urlOf(name: string): string;
  /** A bare repository and a work tree to commit to it; returns a commit function. */
  repository(name: string): Promise<{ url: string; work: string; commit(message: string, files: Record<string, string>): Promise<string> }>;
  /** Replaces the authorised keys. */
  authorize(publicKeys: string[]): Promise<void>;
  stop(): Promise<void>;
}

/** Starts sshd; `hostKeyDir` lets a second server present the same host key (or, omitted, a new one). */
export async function startSshGitServer(options: { authorizedKeys: string[]; port?: number; hostKey?: string } = { authorizedKeys: [] }): Promise<SshGitServer> {
  const dir = await mkdtemp(join(tmpdir(), "berth-sshd-"));
  await chmod(dir, 0o755);
  const hostKey = join(dir, "host_ed25519");
  if (options.hostKey !== undefined) {
    await writeFile(hostKey, options.hostKey, { mode: 0o600 });
  } else await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey]);
  const authorized = join(dir, "authorized_keys");
  await writeFile(authorized, options.authorizedKeys.map((k) => `${k}\n`).join(""), { mode: 0o600 });
  const port = options.port ?? (await freePort());
  const user = userInfo().username;
  const config = join(dir, "sshd_config");
  await writeFile(
    config,
    [
      `ListenAddress 127.0.0.1`,
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      `AuthorizedKeysFile ${authorized}`,
      "PubkeyAuthentication yes",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "PermitRootLogin prohibit-password",
      `AllowUsers ${user}`,
      "AllowTcpForwarding no",
      "X11Forwarding no",
      "PermitUserEnvironment no",
      "LogLevel VERBOSE",
      "",
    ].join("\n"),
  );
  // sshd's privilege separation wants its empty directory.
  await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const child: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", config, "-p", String(port)], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr?.on("data", (d: Buffer) => {
    log = (log + d.toString()).slice(-20_000);
  });
  const deadline = Date.now() + 10_000;
  while (!(await bannerOf(port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`sshd did not start on port ${port}: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const urlOf = (name: string) => `ssh://${user}@127.0.0.1:${port}${join(dir, "repos", `${name}.git`)}`;
  return {
    port,
    dir,
    urlOf,
    async repository(name) {
      const bare = join(dir, "repos", `${name}.git`);
      const work = join(dir, "work", name);
      await mkdir(dirname(bare), { recursive: true });
      await mkdir(work, { recursive: true });
      await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
      await git(["init", "--quiet", "--initial-branch=main"], work);
      await git(["remote", "add", "origin", bare], work);
      return {
        url: urlOf(name),
        work,
        async commit(message, files) {
          for (const [path, content] of Object.entries(files)) {
            await mkdir(dirname(join(work, path)), { recursive: true });
            await writeFile(join(work, path), content);
          }
          await git(["add", "--all"], work);
          await git(["commit", "--quiet", "--allow-empty", "-m", message], work);
          await git(["push", "--quiet", "origin", "HEAD:main"], work);
          return git(["rev-parse", "HEAD"], work);
        },
      };
    },
    async authorize(publicKeys) {
      await writeFile(authorized, publicKeys.map((k) => `${k}\n`).join(""), { mode: 0o600 });
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The host key of a running server's folder, to start another with the same identity. */
export async function hostKeyOf(server: SshGitServer): Promise<string> {
  return readFile(join(server.dir, "host_ed25519"), "utf8");
}
