// The agent-releases module: serving the agent executables and installers, and self-update.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { agentDistDir, publicUrl } from "../../config.ts";
import type { AgentCommands } from "../agents/agent-commands.ts";
import type { CommandSigner } from "../agents/signing-keys.ts";
import { agentReleasesRoutes } from "./agent-releases.routes.ts";
import { createAgentReleases } from "./agent-releases.service.ts";

export { installCommand, installOrigin, InstallOriginError } from "./install-origin.ts";
export { createAgentReleases, type AgentReleases, AgentReleaseError } from "./agent-releases.service.ts";

/** Registered by app.ts; the directory and the public URL come from the environment (config.ts). */
export function agentReleasesPlugin(deps: { commands: AgentCommands; signer: Pick<CommandSigner, "signRelease" | "releaseKey"> }): FastifyPluginAsyncTypebox {
  const releases = createAgentReleases({ distDir: agentDistDir(), commands: deps.commands });
  const url = publicUrl();
  return agentReleasesRoutes({ releases, signer: deps.signer, ...(url === undefined ? {} : { publicUrl: url }) });
}
