// How a command or an operation ended, in one vocabulary for the support console and the
// customer's audit log: state + a one-line summary a person can read.
import { isActive, WAITING_STATUSES } from "../deployments/operations/deployment-state.ts";

export interface Outcome {
  /** requested | refused | pending | running | succeeded | failed | rejected | expired | cancelled */
  state: string;
  summary: string;
}

export function operationOutcome(kind: string, status: string, errorMessage: string | null): Outcome {
  if ((WAITING_STATUSES as readonly string[]).includes(status)) return { state: "pending", summary: `${kind} is waiting for the agent` };
  if (isActive(status)) return { state: "running", summary: `${kind} is running` };
  if (status === "success" || status === "destroyed") return { state: "succeeded", summary: `${kind} succeeded` };
  if (status === "cancelled") return { state: "cancelled", summary: errorMessage ?? `${kind} was cancelled` };
  if (status === "rolled_back") return { state: "succeeded", summary: `${kind} succeeded (since rolled back)` };
  return { state: "failed", summary: errorMessage ?? `${kind} failed` };
}

export function commandOutcome(
  type: string,
  state: string,
  result: Record<string, unknown> | null,
  error: { code?: string; message?: string } | null,
): Outcome {
  switch (state) {
    case "pending":
      return { state: "pending", summary: "Waiting for the agent" };
    case "accepted":
      return { state: "running", summary: "Running on the agent" };
    case "succeeded":
      return { state: "succeeded", summary: resultSummary(type, result) };
    case "rejected":
      return { state: "rejected", summary: `Rejected by the agent: ${error?.message ?? error?.code ?? "no reason given"}` };
    case "expired":
      return { state: "expired", summary: "The agent did not take the command before it expired" };
    default:
      return { state: "failed", summary: error?.message ?? `${type} failed` };
  }
}

/** One line about what a succeeded command returned. */
export function resultSummary(type: string, result: Record<string, unknown> | null): string {
  if (type === "logs.tail" && Array.isArray(result?.lines)) {
    const n = result.lines.length;
    const from = typeof result.container === "string" ? ` of ${result.container}` : "";
    return `${n} log line${n === 1 ? "" : "s"}${from}${result.truncated === true ? " (truncated)" : ""}`;
  }
  if (type === "diagnostics" && result) return `Diagnostics collected${result.partial === true ? " (partial)" : ""}`;
  return `${type} succeeded`;
}
