// A command's parameters are typed from the dispatcher to the signed envelope: issue()
// takes the protocol's CommandParams<T> of the command's type, so a wrong parameter does
// not compile. The @ts-expect-error lines are the proof: `npm run typecheck` (tsc over src/)
// fails if any of them compiles, as it would if params were Record<string, unknown> again.
import { describe, expectTypeOf, it } from "vitest";
import type { CommandParams } from "@berth/protocol";
import type { IssueInput, TypedCommand } from "../../agents/agent-commands.ts";

const at = { organizationId: "o", serverId: "s", issuedBy: "system:test" };
const ids = { deployment_id: "d", environment_id: "e" };

// Never called: only compiled.
function compiled(issue: (input: IssueInput) => unknown) {
  issue({ ...at, type: "restart", params: ids });
  issue({ ...at, type: "destroy", params: { ...ids, delete_data: true } });
  issue({ ...at, type: "logs.tail", params: { environment_id: "e", lines: 20 } });
  // @ts-expect-error a parameter the command does not have
  issue({ ...at, type: "restart", params: { ...ids, force: true } });
  // @ts-expect-error a parameter of the wrong type
  issue({ ...at, type: "destroy", params: { ...ids, delete_data: "yes" } });
  // @ts-expect-error a required parameter missing
  issue({ ...at, type: "backup", params: ids });
  // @ts-expect-error another type's parameters
  issue({ ...at, type: "logs.tail", params: ids });
  // @ts-expect-error a command type that does not exist
  issue({ ...at, type: "reboot", params: {} });
}

describe("typed commands", () => {
  it("carry the protocol's parameters of their own type", () => {
    expectTypeOf(compiled).toBeFunction();
    expectTypeOf<Extract<TypedCommand, { type: "route" }>["params"]>().toEqualTypeOf<CommandParams<"route">>();
    expectTypeOf<Extract<IssueInput, { type: "deploy" }>["params"]>().toEqualTypeOf<CommandParams<"deploy">>();
  });
});
