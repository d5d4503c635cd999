// The settings of a replica's agent links (what one server's agent may send, how many
// handshakes an address may open) and of its graceful drain on SIGTERM (lifecycle/drain.ts).
import { setting } from "@berth/protocol";
import { DEFAULT_LINK_LIMITS } from "../modules/agents/link/limits.ts";
import { millis, positiveWhole } from "./setting-parsers.ts";

export const REPLICA_SETTINGS = {
  agentLogLinesPerMinute: setting({
    name: "BERTH_AGENT_LOG_LINES_PER_MINUTE",
    defaultText: String(DEFAULT_LINK_LIMITS.logLinesPerMinute),
    description: "Log lines a server's agent may store a minute; past it lines are acknowledged, not stored, and a notice line says so",
    parse: positiveWhole("BERTH_AGENT_LOG_LINES_PER_MINUTE"),
  }),
  agentLogBytesPerMinute: setting({
    name: "BERTH_AGENT_LOG_BYTES_PER_MINUTE",
    defaultText: `${DEFAULT_LINK_LIMITS.logBytesPerMinute} (64 MiB)`,
    description: "Bytes of log text a server's agent may store a minute",
    parse: positiveWhole("BERTH_AGENT_LOG_BYTES_PER_MINUTE"),
  }),
  agentHandshakesPerAddress: setting({
    name: "BERTH_AGENT_HANDSHAKES_PER_ADDRESS",
    defaultText: String(DEFAULT_LINK_LIMITS.handshakesPerAddress),
    description: "Unauthenticated agent connections one address may hold, per replica (raise it when many agents share an address, e.g. NAT)",
    parse: positiveWhole("BERTH_AGENT_HANDSHAKES_PER_ADDRESS"),
  }),
  agentHellosPerAddressPerMinute: setting({
    name: "BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE",
    defaultText: String(DEFAULT_LINK_LIMITS.hellosPerAddressPerMinute),
    description: "Agent handshakes one address may start a minute, per replica",
    parse: positiveWhole("BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE"),
  }),
  // Graceful drain of a replica on SIGTERM (lifecycle/drain.ts).
  drainSettleMs: setting({
    name: "BERTH_DRAIN_SETTLE_MS",
    default: "2000",
    description: "On SIGTERM: how long `/readyz` answers 503 before the replica hands its agents over, so the load balancer stops sending it new work",
    parse: millis("BERTH_DRAIN_SETTLE_MS", 600_000),
  }),
  drainHandoverMs: setting({
    name: "BERTH_DRAIN_HANDOVER_MS",
    default: "10000",
    description: "On SIGTERM: the window over which the replica's agents are closed (code 1012) one after another, so they do not all reconnect to the others at once",
    parse: millis("BERTH_DRAIN_HANDOVER_MS", 600_000),
  }),
  drainTimeoutMs: setting({
    name: "BERTH_DRAIN_TIMEOUT_MS",
    default: "30000",
    description: "On SIGTERM: the whole drain's deadline; past it the process exits (code 1) and logs what was still open",
    parse: millis("BERTH_DRAIN_TIMEOUT_MS", 3_600_000),
  }),
} as const;
