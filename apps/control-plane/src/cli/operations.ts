// What every command that starts an operation does once the API accepted it: print its id
// (or, with --json, the API's answer), or follow it to its end with --follow.
import { randomUUID } from "node:crypto";
import type { Context } from "./context.ts";
import { followDeployment } from "./follow.ts";

/** Headers of a public API action: a fresh Idempotency-Key per invocation, so a retried request is not run twice. */
export function idempotent(): { headers: Record<string, string> } {
  return { headers: { "idempotency-key": randomUUID() } };
}

export async function started(ctx: Context, id: string, answer: unknown, what: string, follow: boolean | undefined): Promise<void> {
  const out = ctx.out;
  if (!follow) {
    out.result(answer, () => {
      out.note(`${what} started; follow it with: berth logs ${id} --follow`);
      out.line(id);
    });
    return;
  }
  if (out.json) out.line(JSON.stringify({ type: "started", id, answer }));
  else out.note(`${what} ${id} started.`);
  await followDeployment(ctx, id);
}
