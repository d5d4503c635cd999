// What a customer's server fetches to install the agent, with no API key (like enrolment,
// which the one-time token authorises): the executables, their checksums, and the install
// and uninstall scripts. `curl -fsSL https://<control-plane>/install.sh | sudo sh -s -- --token <token>`.
import { createReadStream } from "node:fs";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { ErrorBody } from "../../lib/http-schemas.ts";
import type { CommandSigner } from "../agents/signing-keys.ts";
import { AGENT_ARCHES, AgentReleaseError, type AgentReleases } from "./agent-releases.service.ts";
import { installOrigin, InstallOriginError } from "./install-origin.ts";

const ArchParams = Type.Object({ arch: Type.String({ maxLength: 16, description: `One of ${AGENT_ARCHES.join(", ")}` }) });
const Binary = Type.Unsafe<unknown>({ type: "string", format: "binary", description: "The agent executable (application/octet-stream)" });
const Text = Type.String();
const Releases = Type.Object({
  version: Type.String(),
  install_command: Type.String({ description: "What the dashboard shows; <token> is the server's one-time enrolment token" }),
  release_key: Type.Optional(Type.String({ description: "The Ed25519 public key (base64) the release manifest is signed with: install.sh --key" })),
  executables: Type.Array(
    Type.Object({ arch: Type.String(), url: Type.String(), sha256: Type.String(), size: Type.Integer() }),
  ),
});

function sendError(reply: FastifyReply, error: unknown) {
  if (error instanceof InstallOriginError || (error instanceof AgentReleaseError && error.code === "invalid_host")) {
    return reply.code(400).send({ error: "invalid_host", message: error.message, request_id: reply.request.id });
  }
  if (error instanceof AgentReleaseError) {
    return reply.code(404).send({ error: error.code, message: error.message, request_id: reply.request.id });
  }
  throw error;
}

export function agentReleasesRoutes(deps: {
  releases: AgentReleases;
  publicUrl?: string;
  signer?: Pick<CommandSigner, "signRelease" | "releaseKey">;
}): FastifyPluginAsyncTypebox {
  /** BERTH_PUBLIC_URL, else the request's origin when its Host is plain (install-origin.ts). */
  const origin = (request: FastifyRequest) => installOrigin(request, deps.publicUrl);
  return async (app) => {
    app.get(
      "/agent/v1/download/:arch",
      { schema: { hide: true, params: ArchParams, response: { 200: Binary, 404: ErrorBody } } },
      async (request, reply) => {
        try {
          const r = deps.releases.release(request.params.arch);
          return reply
            .header("content-type", "application/octet-stream")
            .header("content-length", r.size)
            .header("content-disposition", `attachment; filename="${r.name}"`)
            .header("x-checksum-sha256", r.sha256)
            .header("x-agent-version", r.version)
            .header("cache-control", "no-cache")
            .send(createReadStream(r.file));
        } catch (error) {
          return sendError(reply, error);
        }
      },
    );

    app.get(
      "/agent/v1/download/:arch/sha256",
      { schema: { hide: true, params: ArchParams, response: { 200: Text, 404: ErrorBody } } },
      async (request, reply) => {
        try {
          const r = deps.releases.release(request.params.arch);
          return reply.type("text/plain; charset=utf-8").header("cache-control", "no-cache").send(`${r.sha256}  ${r.name}\n`);
        } catch (error) {
          return sendError(reply, error);
        }
      },
    );

    app.get("/agent/v1/SHA256SUMS", { schema: { hide: true, response: { 200: Text, 404: ErrorBody } } }, async (_request, reply) => {
      const all = deps.releases.releases();
      if (all.length === 0) {
        return sendError(reply, new AgentReleaseError("agent_not_built", `no agent has been built on this control plane (npm run build:agent)`));
      }
      return reply.type("text/plain; charset=utf-8").header("cache-control", "no-cache").send(all.map((r) => `${r.sha256}  ${r.name}\n`).join(""));
    });

    app.get("/agent/v1/releases", { schema: { hide: true, response: { 200: Releases, 400: ErrorBody, 404: ErrorBody } } }, async (request, reply) => {
      const all = deps.releases.releases();
      if (all.length === 0) {
        return sendError(reply, new AgentReleaseError("agent_not_built", "no agent has been built on this control plane (npm run build:agent)"));
      }
      let base: string;
      try {
        base = origin(request);
      } catch (error) {
        return sendError(reply, error);
      }
      const key = deps.signer ? await deps.signer.releaseKey() : undefined;
      return {
        version: all[0]!.version,
        install_command: deps.releases.installCommand(base, "<token>", key),
        ...(key === undefined ? {} : { release_key: key }),
        executables: all.map((r) => ({ arch: r.arch, url: `${base}/agent/v1/download/${r.arch}`, sha256: r.sha256, size: r.size })),
      };
    });

    app.get("/install.sh", { schema: { hide: true, response: { 200: Text, 400: ErrorBody, 404: ErrorBody } } }, async (request, reply) => {
      try {
        // Built before the reply says text: a refusal is a JSON error body.
        const script = deps.releases.installScript(origin(request));
        return reply.type("text/x-shellscript; charset=utf-8").header("cache-control", "no-cache").send(script);
      } catch (error) {
        return sendError(reply, error);
      }
    });

    // The signed release manifest (agent-releases.service.ts, signedManifest).
    app.get("/agent/v1/release", { schema: { hide: true, response: { 200: Text, 404: ErrorBody } } }, async (_request, reply) => {
      if (!deps.signer) return sendError(reply, new AgentReleaseError("agent_not_built", "this control plane does not sign releases"));
      try {
        const manifest = await deps.releases.signedManifest(deps.signer);
        return reply.type("text/plain; charset=utf-8").header("cache-control", "no-cache").send(manifest);
      } catch (error) {
        return sendError(reply, error);
      }
    });

    app.get("/uninstall.sh", { schema: { hide: true, response: { 200: Text, 404: ErrorBody } } }, async (_request, reply) => {
      try {
        return reply.type("text/x-shellscript; charset=utf-8").header("cache-control", "no-cache").send(deps.releases.uninstallScript());
      } catch (error) {
        return sendError(reply, error);
      }
    });
  };
}
