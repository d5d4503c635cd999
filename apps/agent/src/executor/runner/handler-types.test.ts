// A handler receives its command type's CommandParams<T>, bound by bindHandler without a
// cast. The @ts-expect-error lines are the proof: `npm run typecheck` (tsc over src/) fails
// if a handler could be registered for parameters its command does not carry.
import { describe, expect, expectTypeOf, it } from "vitest";
import type { CommandParams } from "@berth/protocol";
import { bindHandler, type CommandHandler, type HandlerRegistry } from "./handler-types.ts";

const restart: CommandHandler<"restart"> = async (params) => ({ restarted: params.environment_id });

// Never called: only compiled.
function compiled() {
  const ok: HandlerRegistry = { restart };
  // @ts-expect-error a handler of another command's parameters
  const wrong: HandlerRegistry = { "logs.tail": restart };
  // @ts-expect-error a parameter the command does not carry
  const missing: CommandHandler<"stop"> = async (params) => ({ lines: params.lines });
  // @ts-expect-error params of another type
  bindHandler(ok, "restart", { environment_id: "e", lines: 20 });
  return [wrong, missing];
}

describe("bindHandler", () => {
  it("gives the registry's handler the command's own params", async () => {
    expectTypeOf(compiled).toBeFunction();
    expectTypeOf<Parameters<CommandHandler<"destroy">>[0]>().toEqualTypeOf<CommandParams<"destroy">>();
    const bound = bindHandler({ restart }, "restart", { deployment_id: "d", environment_id: "e" });
    const ctx = {} as Parameters<NonNullable<typeof bound>>[0];
    await expect(bound!(ctx)).resolves.toEqual({ restarted: "e" });
    expect(bindHandler({ restart }, "stop", { deployment_id: "d", environment_id: "e" })).toBeUndefined();
  });
});
