// Public entry of @berth/agent, for cross-app end-to-end suites: the factories that make a
// running agent, and the CLI's main. The executable's entry is cli.ts.
export { createAgent, type Agent, type AgentDeps, type ShutdownOptions } from "./agent/agent.ts";
export { main } from "./cli/main.ts";
export { createDockerClient, type DockerClient } from "./docker/docker-client.ts";
export { createCommandRunner, type CommandRunner } from "./executor/runner/command-runner.ts";
export type { CommandHandler, HandlerRegistry } from "./executor/runner/handler-types.ts";
export { createRegistry } from "./executor/registry.ts";
export { openJournal } from "./journal/journal.ts";
export { createLink, type Link } from "./link/link.ts";
export { createStatsSampler, type StatsSampler } from "./stats/stats-sampler.ts";
export { AGENT_VERSION } from "./version.ts";
