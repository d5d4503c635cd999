// One operation at a time per environment on this agent. The control plane already refuses
// a second active operation (a unique index); this guards the agent against a redelivered
// or hand-made command racing a running one over the same containers and files.
import { CommandError } from "./handler-types.ts";

export interface EnvironmentLocks {
  /** Runs `work` holding the environment's lock; fails at once with environment_busy if it is held. */
  withLock<T>(environmentId: string, operation: string, work: () => Promise<T>): Promise<T>;
}

export function createEnvironmentLocks(): EnvironmentLocks {
  const held = new Map<string, string>();
  return {
    async withLock(environmentId, operation, work) {
      const holder = held.get(environmentId);
      if (holder !== undefined) {
        throw new CommandError(
          "environment_busy",
          `environment ${environmentId} is busy with a ${holder} on this server; try again when it has finished`,
        );
      }
      held.set(environmentId, operation);
      try {
        return await work();
      } finally {
        held.delete(environmentId);
      }
    },
  };
}
