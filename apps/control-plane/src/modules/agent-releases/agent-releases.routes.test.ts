// The installer's authenticity, as an attacker would try it: Host headers that would break
// out of the served install.sh, plain http to another machine, and a release manifest or
// executable that is not the one the control plane's key signed (install.sh's own
// verify_release and check_url, run with sh).
import { execFile } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Fastify, { type FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportPublicKey } from "@berth/protocol";
import type { AgentCommands } from "../agents/agent-commands.ts";
import { agentReleasesRoutes } from "./agent-releases.routes.ts";
import { createAgentReleases } from "./agent-releases.service.ts";
import { installOrigin, isLoopbackHost } from "./install-origin.ts";

const exec = promisify(execFile);
const INSTALL_SH = fileURLToPath(new URL("../../../../../installers/install.sh", import.meta.url));
const EXE = Buffer.from("#!/bin/sh\necho 9.9.9\n");

const keyPair = () => generateKeyPairSync("ed25519");
const cpKey = keyPair();
const otherKey = keyPair();
const signerOf = (k: ReturnType<typeof keyPair>) => ({
  signRelease: async (text: string) => ({ key_id: "k1", public_key: exportPublicKey(k.publicKey), signature: sign(null, Buffer.from(text), k.privateKey).toString("base64") }),
  releaseKey: async () => exportPublicKey(k.publicKey),
});

let dir: string;
let exeSha: string;
const apps: FastifyInstance[] = [];

async function appWith(publicUrl?: string): Promise<FastifyInstance> {
  const releases = createAgentReleases({ distDir: dir, commands: {} as AgentCommands });
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  await app.register(agentReleasesRoutes({ releases, signer: signerOf(cpKey), ...(publicUrl ? { publicUrl } : {}) }));
  apps.push(app);
  return app;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "berth-releases-"));
  copyFileSync(INSTALL_SH, path.join(dir, "install.sh"));
  writeFileSync(path.join(dir, "berth-agent-linux-x64"), EXE);
  exeSha = (await exec("sha256sum", [path.join(dir, "berth-agent-linux-x64")])).stdout.split(" ")[0]!;
  const manifest = { version: "9.9.9", executables: { x64: { file: "berth-agent-linux-x64", sha256: exeSha, size: EXE.length } } };
  writeFileSync(path.join(dir, "manifest.json"), JSON.stringify(manifest));
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe("the URL baked into install.sh and the install command", () => {
  const hostile = ['evil.com";rm -rf /;"', "evil.com$(touch /tmp/pwned)", "evil.com`id`", "evil.com'x", "a b", "evil.com;id", "evil.com\\", "evil.com/x"];

  it.each(hostile)("refuses the Host %j with invalid_host, or at least pastes nothing of it", async (host) => {
    const app = await appWith();
    for (const url of ["/install.sh", "/agent/v1/releases"]) {
      const res = await app.inject({ method: "GET", url, headers: { host } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: "invalid_host" });
      expect(res.body).not.toContain("DEFAULT_URL");
    }
  });

  it("refuses a Host with a newline (or Node refuses to send it)", async () => {
    const app = await appWith();
    const res = await app.inject({ method: "GET", url: "/install.sh", headers: { host: "evil.com\nrm -rf /" } }).catch((e: Error) => e);
    if (res instanceof Error) return;
    expect(res.statusCode).toBe(400);
  });

  it("uses BERTH_PUBLIC_URL whatever the Host says", async () => {
    const app = await appWith("https://berth.example.com");
    const res = await app.inject({ method: "GET", url: "/install.sh", headers: { host: 'evil.com";id;"' } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("DEFAULT_URL='https://berth.example.com'");
    expect(res.body).not.toContain("evil");
  });

  it("takes a plain Host, with https unless it is this machine", async () => {
    const app = await appWith();
    const remote = await app.inject({ method: "GET", url: "/install.sh", headers: { host: "cp.example.com:8443" } });
    expect(remote.body).toContain("DEFAULT_URL='https://cp.example.com:8443'");
    const local = await app.inject({ method: "GET", url: "/agent/v1/releases", headers: { host: "127.0.0.1:3000" } });
    expect(local.json()).toMatchObject({
      install_command: `curl -fsSL http://127.0.0.1:3000/install.sh | sudo sh -s -- --key ${exportPublicKey(cpKey.publicKey)} --token <token>`,
      release_key: exportPublicKey(cpKey.publicKey),
    });
    expect(installOrigin({ protocol: "http", host: "[::1]:80" })).toBe("http://[::1]:80");
    expect(installOrigin({ protocol: "http", host: "127.0.0.1.evil.com" })).toBe("https://127.0.0.1.evil.com");
    expect(isLoopbackHost("localhost.evil.com")).toBe(false);
  });
});

/** install.sh's functions (between two marker lines) run with sh; `die` prints and exits 1. */
async function installSh(fn: RegExp, script: string, env: Record<string, string>) {
  const text = readFileSync(INSTALL_SH, "utf8");
  const start = text.search(fn);
  const body = text.slice(start, text.indexOf("\n}\n", start) + 3);
  const prelude = `set -eu\ndie() { printf 'error: %s\\n' "$*" >&2; exit 1; }\nsay() { :; }\n`;
  try {
    const { stdout } = await exec("sh", ["-c", `${prelude}${body}${script}`], { env: { PATH: process.env.PATH!, ...env } });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("install.sh", () => {
  it("refuses plain http to another machine, and says why", async () => {
    const loopback = /^is_loopback\(\)/m;
    const checkUrl = async (url: string) => {
      const text = readFileSync(INSTALL_SH, "utf8");
      const a = text.slice(text.search(loopback));
      const fns = a.slice(0, a.indexOf("\n}\n", a.indexOf("check_url()")) + 3);
      return installShText(fns, `check_url "$U"; echo ok`, { U: url, insecure: "0" });
    };
    expect((await checkUrl("http://berth.example.com")).stderr).toContain(
      "refusing to download from http://berth.example.com: plain http:// can be read and altered on the way; use https:// (http:// is allowed to 127.0.0.1, localhost and ::1 only)",
    );
    expect((await checkUrl("http://127.0.0.1.evil.com:80")).code).toBe(1);
    expect((await checkUrl('https://evil.com";id;"')).stderr).toContain("not a plain http(s)://host[:port] URL");
    for (const good of ["https://berth.example.com", "http://127.0.0.1:3000", "http://localhost:80", "http://[::1]:8080"]) {
      expect((await checkUrl(good)).stdout).toBe("ok\n");
    }
  });

  describe("verify_release: the signed manifest against --key", () => {
    let manifest: string;
    beforeAll(async () => {
      const app = await appWith();
      const res = await app.inject({ method: "GET", url: "/agent/v1/release", headers: { host: "127.0.0.1" } });
      expect(res.statusCode).toBe(200);
      manifest = res.body;
      expect(manifest).toBe(`berth-agent-release 1\nversion 9.9.9\nx64 ${exeSha} ${EXE.length}\nsignature ed25519 k1 ${manifest.split(" ").at(-1)}`);
    });

    const verify = async (text: string, key: string) => {
      const work = mkdtempSync(path.join(os.tmpdir(), "berth-verify-"));
      writeFileSync(path.join(work, "release"), text);
      try {
        return await installSh(/^verify_release\(\)/m, `verify_release "$W/release" "$K"; echo "$sha256 $size"`, { W: work, work, K: key, arch: "x64", sha256: "" });
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    };

    it("accepts the genuine manifest and takes its digest and size", async () => {
      const r = await verify(manifest, exportPublicKey(cpKey.publicKey));
      expect(r.stdout).toBe(`${exeSha} ${EXE.length}\n`);
    });

    it("refuses a manifest with one byte changed", async () => {
      const tampered = manifest.replace(`x64 ${exeSha.slice(0, 1)}`, `x64 ${exeSha.startsWith("0") ? "1" : "0"}`);
      expect(tampered).not.toBe(manifest);
      const r = await verify(tampered, exportPublicKey(cpKey.publicKey));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("the release manifest's signature does not verify against the control plane's key");
    });

    it("refuses a manifest signed with another key", async () => {
      const body = manifest.slice(0, manifest.indexOf("signature "));
      const forged = `${body}signature ed25519 k1 ${sign(null, Buffer.from(body), otherKey.privateKey).toString("base64")}\n`;
      const r = await verify(forged, exportPublicKey(cpKey.publicKey));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("does not verify");
      // ...and the genuine one does not verify against the other key either.
      expect((await verify(manifest, exportPublicKey(otherKey.publicKey))).code).toBe(1);
    });

    it("refuses an unsigned manifest", async () => {
      const body = manifest.slice(0, manifest.indexOf("signature "));
      const r = await verify(body, exportPublicKey(cpKey.publicKey));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("not signed");
    });
  });
});

async function installShText(fns: string, script: string, env: Record<string, string>) {
  const prelude = `set -eu\ndie() { printf 'error: %s\\n' "$*" >&2; exit 1; }\ninsecure=$insecure\n`;
  try {
    const { stdout } = await exec("sh", ["-c", `${prelude}${fns}${script}`], { env: { PATH: process.env.PATH!, ...env } });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
