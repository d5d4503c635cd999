// What a command handler is and what it is given. One handler per command type; each maps
// its params to fixed Docker calls, never to a shell string.
import type { CommandParams, CommandType, LogLevel, StepId } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { CodedError } from "../../coded-error.ts";

export type JsonObject = Record<string, unknown>;

/** Events a handler reports; each is journalled at once and sent when the link allows. */
export interface CommandEmitter {
  log(level: LogLevel, message: string, options?: { step?: StepId | null; data?: JsonObject }): void;
  stepStarted(step: StepId, message?: string): void;
  stepFinished(step: StepId, message?: string): void;
  stepFailed(step: StepId, error: { code: string; message: string }): void;
}

export interface HandlerContext {
  commandId: string;
  /** Aborted on `command.cancel` or when the command outlives its deadline; stop promptly. */
  signal: AbortSignal;
  emit: CommandEmitter;
  docker: DockerClient;
}

/** Resolves with the command's output (`command.result.result`); throws to fail it. */
export type CommandHandler<T extends CommandType = CommandType> = (
  params: CommandParams<T>,
  ctx: HandlerContext,
) => Promise<JsonObject>;

/** The command types this agent runs; its keys are the `capabilities` sent in `hello`. */
export type HandlerRegistry = { readonly [T in CommandType]?: CommandHandler<T> };

/** A failure with a stable code, reported as `command.result.error`. */
export class CommandError extends CodedError {
  override name = "CommandError";

  /** What the command did before it failed, sent beside the error (command.result.result): a refused deploy's test results. */
  constructor(
    code: string,
    message: string,
    readonly result?: JsonObject,
  ) {
    super(code, message);
  }
}

/** A command's handler with its params bound: what the runner starts. */
export type BoundHandler = (ctx: HandlerContext) => Promise<JsonObject>;

/**
 * The registry's handler of a command type with the command's params bound to it, or
 * undefined when this agent does not run that type. `params` is the type's own
 * CommandParams<T>, as checkCommand narrowed it: no cast between the signed command and
 * the handler.
 */
export function bindHandler<T extends CommandType>(registry: HandlerRegistry, type: T, params: CommandParams<T>): BoundHandler | undefined {
  const handler: CommandHandler<T> | undefined = registry[type];
  return handler && ((ctx) => handler(params, ctx));
}

export function capabilitiesOf(registry: HandlerRegistry): string[] {
  return Object.keys(registry).sort();
}
