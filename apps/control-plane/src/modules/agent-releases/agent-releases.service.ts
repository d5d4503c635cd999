// The agent executables this control plane hands out (npm run build:agent writes them with
// manifest.json, SHA256SUMS and the installer scripts into one directory), and the signed
// agent.update command that tells an enrolled agent to replace itself with one of them.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { Type, type Static } from "typebox";
import { Compile } from "typebox/compile";
import type { AgentCommandRow, AgentCommands } from "../agents/agent-commands.ts";
import type { CommandSigner } from "../agents/signing-keys.ts";
import { installCommand, isShellSafeUrl } from "./install-origin.ts";

export const AGENT_ARCHES = ["x64", "arm64"] as const;
export type AgentArch = (typeof AGENT_ARCHES)[number];

const ManifestEntry = Type.Object({ file: Type.String(), sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }), size: Type.Integer() });
const Manifest = Type.Object({
  version: Type.String(),
  executables: Type.Object({ x64: Type.Optional(ManifestEntry), arm64: Type.Optional(ManifestEntry) }),
});
type Manifest = Static<typeof Manifest>;
const checkManifest = Compile(Manifest);

export interface AgentRelease {
  arch: AgentArch;
  version: string;
  file: string;
  name: string;
  sha256: string;
  size: number;
}

/** A coded failure the routes turn into `{error, message}`. */
export class AgentReleaseError extends Error {
  constructor(
    readonly code: "agent_not_built" | "unsupported_arch" | "agent_update_unsupported" | "invalid_host",
    message: string,
  ) {
    super(message);
    this.name = "AgentReleaseError";
  }
}

export function createAgentReleases(deps: { distDir: string; commands: AgentCommands }) {
  const distDir = path.resolve(deps.distDir);
  // The manifest is re-read when it changes, so a rebuild is served without a restart.
  let cached: { mtimeMs: number; manifest: Manifest } | null = null;

  function manifest(): Manifest | null {
    const file = path.join(distDir, "manifest.json");
    if (!existsSync(file)) return null;
    const mtimeMs = statSync(file).mtimeMs;
    if (cached?.mtimeMs === mtimeMs) return cached.manifest;
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
    if (!checkManifest.Check(parsed)) throw new Error(`${file} is not an agent manifest`);
    cached = { mtimeMs, manifest: parsed };
    return parsed;
  }

  function release(arch: string): AgentRelease {
    if (!(AGENT_ARCHES as readonly string[]).includes(arch)) {
      throw new AgentReleaseError("unsupported_arch", `no agent for architecture "${arch}": use one of ${AGENT_ARCHES.join(", ")}`);
    }
    const m = manifest();
    const entry = m?.executables[arch as AgentArch];
    const file = entry ? path.join(distDir, path.basename(entry.file)) : "";
    if (!m || !entry || !existsSync(file)) {
      throw new AgentReleaseError(
        "agent_not_built",
        `the agent for linux-${arch} has not been built on this control plane (npm run build:agent; looked in ${distDir})`,
      );
    }
    return { arch: arch as AgentArch, version: m.version, file, name: path.basename(entry.file), sha256: entry.sha256, size: entry.size };
  }

  function script(name: "install.sh" | "uninstall.sh"): string {
    const file = path.join(distDir, name);
    if (!existsSync(file)) {
      throw new AgentReleaseError("agent_not_built", `${name} is not in ${distDir}: build the agent first (npm run build:agent)`);
    }
    return readFileSync(file, "utf8");
  }

  function releases(): AgentRelease[] {
    const m = manifest();
    if (!m) return [];
    return AGENT_ARCHES.filter((a) => m.executables[a]).map((a) => release(a));
  }

  return {
    distDir,
    release,
    /** Every executable built here, for SHA256SUMS. */
    releases,
    uninstallScript: () => script("uninstall.sh"),
    /** install.sh with this control plane's URL as its default --url (between single quotes). */
    installScript(baseUrl: string): string {
      const base = baseUrl.replace(/\/+$/, "");
      // Never paste anything a shell would read as more than a word (install-origin.ts).
      if (!isShellSafeUrl(base)) throw new AgentReleaseError("invalid_host", `${JSON.stringify(base)} is not a plain http(s)://host[:port] origin`);
      return script("install.sh").replace("@BERTH_CONTROL_PLANE_URL@", base);
    },
    installCommand,
    /**
     * The signed release manifest install.sh verifies against the operator's --key (and
     * re-installs against the keys the agent pinned at enrolment):
     *
     *   berth-agent-release 1
     *   version <version>
     *   <arch> <sha256> <size>        (one line per executable)
     *   signature ed25519 <key_id> <base64 signature of every line above, newlines included>
     */
    async signedManifest(signer: Pick<CommandSigner, "signRelease">): Promise<string> {
      const all = releases();
      if (all.length === 0) throw new AgentReleaseError("agent_not_built", "no agent has been built on this control plane (npm run build:agent)");
      const body = releaseManifestBody(all);
      const s = await signer.signRelease(body);
      return `${body}signature ed25519 ${s.key_id} ${s.signature}\n`;
    },
    /**
     * Tells an agent to replace itself with the executable built here, through the signed
     * command path: the command's signature covers sha256 and size, which is what makes the
     * download trustworthy to the agent.
     */
    async issueUpdate(input: { organizationId: string; serverId: string; arch: AgentArch; baseUrl: string; issuedBy: string }): Promise<AgentCommandRow> {
      const r = release(input.arch);
      return deps.commands.issue({
        organizationId: input.organizationId,
        serverId: input.serverId,
        type: "agent.update",
        params: { version: r.version, url: `${input.baseUrl.replace(/\/+$/, "")}/agent/v1/download/${r.arch}`, sha256: r.sha256, size: r.size },
        issuedBy: input.issuedBy,
      });
    },
  };
}

export type AgentReleases = ReturnType<typeof createAgentReleases>;

/** The signed part of the release manifest (see signedManifest). */
export function releaseManifestBody(all: readonly Pick<AgentRelease, "arch" | "version" | "sha256" | "size">[]): string {
  const version = all[0]!.version;
  if (!/^[0-9A-Za-z.+-]{1,64}$/.test(version)) throw new Error(`agent version ${JSON.stringify(version)} cannot go into a release manifest`);
  return `berth-agent-release 1\nversion ${version}\n${all.map((r) => `${r.arch} ${r.sha256} ${r.size}\n`).join("")}`;
}
