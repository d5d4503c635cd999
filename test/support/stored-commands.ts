// Reads a command back from the outbox as the agent gets it: agent_commands keeps it sealed
// with the master key (the test control plane's), so a test opens it as the control plane does.
import type { SignedCommand } from "@berth/protocol";
import { storedCommand } from "../../apps/control-plane/src/modules/agents/agent-commands.ts";
import { TEST_MASTER_KEY } from "./control-plane.ts";

/** The columns a test selects to open a command: `select sealed, signed from agent_commands ...`. */
export interface CommandColumns {
  sealed: string | null;
  signed: SignedCommand | null;
}

/** The command as signed; throws when the outbox no longer holds it (it left pending). */
export function openedCommand(row: CommandColumns): SignedCommand {
  const cmd = storedCommand(TEST_MASTER_KEY, row);
  if (!cmd) throw new Error("the outbox no longer holds this command: it left pending");
  return cmd;
}
