// The NOTIFY channels of the agent link. Every replica's gateway (link/gateway.ts) listens
// on all three and acts for the agents it holds; payloads are two ids joined by a colon.

/** Payload server_id:command_id: a command was written (agent-commands.ts announces it). */
export const COMMANDS_CHANNEL = "berth_agent_commands";
/** Payload server_id:command_id: tell the agent to stop a command it already took. */
export const CANCEL_CHANNEL = "berth_agent_cancel";
/** Payload server_id:connection_id: that connection now holds the server's agent; a replica holding an older one closes it. */
export const TAKEOVER_CHANNEL = "berth_agent_takeover";
