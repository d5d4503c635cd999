// The settings of how long records are kept (modules/retention): deployment log lines, the
// agents' raw journal and ended commands.
import { setting } from "@berth/protocol";
import { DEFAULT_RETENTION } from "../modules/retention/retention.ts";
import { days } from "./setting-parsers.ts";

export const RETENTION_SETTINGS = {
  logRetentionDays: setting({
    name: "BERTH_LOG_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.logDays),
    description:
      "Days a deployment's log lines are kept; `0` keeps them as long as the deployment record (records are never deleted). " +
      "The platform spec states both a 90-day cleanup and keeping logs for the life of the record: the default is the cleanup, `0` the other. " +
      "Whole months expire at once, so a line goes between this many days and a month later",
    parse: days("BERTH_LOG_RETENTION_DAYS"),
  }),
  agentEventRetentionDays: setting({
    name: "BERTH_AGENT_EVENT_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.agentEventDays),
    description:
      "Days the raw journal of what agents sent (steps, results, server logs; the table agent_events) is kept for support and audit; nothing in the product reads it back. `0` keeps it for good",
    parse: days("BERTH_AGENT_EVENT_RETENTION_DAYS"),
  }),
  commandRetentionDays: setting({
    name: "BERTH_COMMAND_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.commandDays),
    description:
      "Days an ended command to an agent (the table agent_commands: type, times, outcome, result; no secret once it was taken) is kept after its issue. " +
      "Commands named by an audit entry (the support console's) are kept for good, as the audit log shows their outcome. `0` keeps every command for good",
    parse: days("BERTH_COMMAND_RETENTION_DAYS"),
  }),
} as const;
