// Events an agent reports: step progress, log lines, command results, host stats and
// container states. Each carries the agent's own sequence number, which is what makes
// resending after a cut link safe (the control plane de-duplicates on server and seq).
import { Type, type Static, type TProperties } from "typebox";
import { ErrorBody, JsonObject, LiteralUnion, Message, Nullable, Seq, Timestamp, Uuid } from "./fields.ts";
import { StepId } from "./steps.ts";
import { CAUGHT_MAIL_FIELDS } from "./caught-mail.ts";

function eventOf<K extends string, P extends TProperties>(kind: K, body: P) {
  return Type.Object({ seq: Seq, ts: Timestamp, kind: Type.Literal(kind), ...body });
}

const stepBody = {
  command_id: Uuid,
  /** Null for commands that are not recorded as a deployment row (logs.tail, diagnostics). */
  deployment_id: Nullable(Uuid),
  step: StepId,
  message: Type.Optional(Message),
};

export const StepStartedEvent = eventOf("step.started", stepBody);
export type StepStartedEvent = Static<typeof StepStartedEvent>;

export const StepFinishedEvent = eventOf("step.finished", stepBody);
export type StepFinishedEvent = Static<typeof StepFinishedEvent>;

/** The error is required: a failure nobody can explain cannot be acted on. */
export const StepFailedEvent = eventOf("step.failed", { ...stepBody, error: ErrorBody });
export type StepFailedEvent = Static<typeof StepFailedEvent>;

export const LOG_LEVELS = ["debug", "info", "warning", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LogLevel = LiteralUnion(LOG_LEVELS);

/** Matches the deployment log entry of platform spec 2.2. */
export const LogEvent = eventOf("log", {
  command_id: Nullable(Uuid),
  deployment_id: Nullable(Uuid),
  level: LogLevel,
  /** At most MAX_MESSAGE_LENGTH characters: the agent truncates a longer line. */
  message: Message,
  step: Nullable(StepId),
  data: Type.Optional(JsonObject),
});
export type LogEvent = Static<typeof LogEvent>;

/** The outcome of a command; sent once per accepted command, after its last step. */
export const CommandResultEvent = eventOf("command.result", {
  command_id: Uuid,
  ok: Type.Boolean(),
  /** Command-specific output, e.g. `{ lines: string[] }` for logs.tail. */
  result: Type.Optional(JsonObject),
  error: Type.Optional(ErrorBody),
});
export type CommandResultEvent = Static<typeof CommandResultEvent>;

const amount = Type.Number({ minimum: 0 });
const count = Type.Integer({ minimum: 0 });

/** A host sample. cpu_percent is of the whole host (0 to 100), not per core. */
export const StatsEvent = eventOf("stats", {
  cpu_percent: Type.Number({ minimum: 0, maximum: 100 }),
  ram_used_mb: amount,
  ram_total_mb: amount,
  disk_used_gb: amount,
  disk_total_gb: amount,
  load1: amount,
  load5: amount,
  load15: amount,
  containers_running: count,
  containers_total: count,
});
export type StatsEvent = Static<typeof StatsEvent>;

/** Docker's container states, plus `removed` once the container no longer exists. */
export const CONTAINER_STATES = [
  "created",
  "running",
  "paused",
  "restarting",
  "removing",
  "exited",
  "dead",
  "removed",
] as const;
export type ContainerState = (typeof CONTAINER_STATES)[number];
export const ContainerState = LiteralUnion(CONTAINER_STATES);

export const ContainerStateEvent = eventOf("container.state", {
  environment_id: Uuid,
  container: Type.String({ minLength: 1 }),
  state: ContainerState,
});
export type ContainerStateEvent = Static<typeof ContainerStateEvent>;

/** Whether a routed host name resolves to this server (verifying_dns and the proxy monitor). */
export const DNS_STATES = ["ok", "mismatch", "unresolved", "unchecked"] as const;
export type DnsState = (typeof DNS_STATES)[number];
/**
 * A host name's certificate: `valid` (served, with its expiry), `pending` (requested, not
 * served yet), `error` (the CA refused or failed; `error` says why), `not_requested` (the
 * name does not resolve here, so no certificate is asked for: a wrong record must not burn
 * the CA's rate limits).
 */
export const CERTIFICATE_STATES = ["valid", "pending", "error", "not_requested"] as const;
export type CertificateState = (typeof CERTIFICATE_STATES)[number];

const Address = Type.String({ minLength: 2, maxLength: 45 });

export const RoutedDomain = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 253 }),
  dns: Type.Object({
    status: LiteralUnion(DNS_STATES),
    /** What the name resolved to. */
    resolved: Type.Array(Address, { maxItems: 32 }),
    /** What it must resolve to: the server's public addresses. */
    expected: Type.Array(Address, { maxItems: 32 }),
  }),
  certificate: Type.Object({
    status: LiteralUnion(CERTIFICATE_STATES),
    not_after: Nullable(Timestamp),
    issuer: Nullable(Type.String({ maxLength: 512 })),
    error: Nullable(Message),
  }),
});
export type RoutedDomain = Static<typeof RoutedDomain>;

/** One environment's routes in the proxy. */
export const ProxyRoute = Type.Object({
  environment_id: Uuid,
  /** serving: to the ERP; maintenance: the environment is stopped and a page says so. */
  mode: Type.Union([Type.Literal("serving"), Type.Literal("maintenance")]),
  domains: Type.Array(RoutedDomain, { maxItems: 32 }),
});
export type ProxyRoute = Static<typeof ProxyRoute>;

/**
 * The server's reverse proxy and every route it holds: sent after each change of routes
 * and when the periodic check sees a certificate or DNS answer change. `routes` is the
 * whole set: an environment missing from it has no route on this server.
 */
export const ProxyStateEvent = eventOf("proxy.state", {
  running: Type.Boolean(),
  image: Nullable(Type.String({ maxLength: 255 })),
  /** The addresses the server's domains must point to. */
  public_addresses: Type.Array(Address, { maxItems: 32 }),
  /** Null when the proxy answers; else why not. */
  error: Nullable(Message),
  routes: Type.Array(ProxyRoute, { maxItems: 1000 }),
});
export type ProxyStateEvent = Static<typeof ProxyStateEvent>;

/** A mail a staging or development ERP sent, caught on the server (caught-mail.ts). */
export const MailCaughtEvent = eventOf("mail.caught", CAUGHT_MAIL_FIELDS);
export type MailCaughtEvent = Static<typeof MailCaughtEvent>;

export const Event = Type.Union([
  StepStartedEvent,
  StepFinishedEvent,
  StepFailedEvent,
  LogEvent,
  CommandResultEvent,
  StatsEvent,
  ContainerStateEvent,
  ProxyStateEvent,
  MailCaughtEvent,
]);
export type Event = Static<typeof Event>;
export type EventKind = Event["kind"];
export type EventOfKind<K extends EventKind> = Extract<Event, { kind: K }>;

export const EVENT_KINDS = [
  "step.started",
  "step.finished",
  "step.failed",
  "log",
  "command.result",
  "stats",
  "container.state",
  "proxy.state",
  "mail.caught",
] as const satisfies readonly EventKind[];

/** An event before the agent's journal gives it a seq and a timestamp. */
export type EventInput = Event extends infer E ? (E extends Event ? Omit<E, "seq" | "ts"> : never) : never;

export const MAX_EVENTS_PER_BATCH = 500;

export const EventBatch = Type.Object({
  events: Type.Array(Event, { minItems: 1, maxItems: MAX_EVENTS_PER_BATCH }),
});
export type EventBatch = Static<typeof EventBatch>;

/**
 * The agent sends its journal in order, so a batch whose seqs do not strictly increase
 * comes from a broken sender; refusing it keeps the receiver's cumulative ack simple.
 * Returns the reason, or null when the order is fine.
 */
export function eventOrderProblem(batch: EventBatch): string | null {
  for (let i = 1; i < batch.events.length; i++) {
    const prev = batch.events[i - 1];
    const cur = batch.events[i];
    if (prev !== undefined && cur !== undefined && cur.seq <= prev.seq) {
      return `/events/${i}/seq: ${cur.seq} does not follow ${prev.seq}`;
    }
  }
  return null;
}
