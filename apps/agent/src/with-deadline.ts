// Every call to something that can hang (the Docker engine, systeminformation, the network)
// gets a deadline, so one stuck call cannot stall a command, the sampler or a shutdown.

export class DeadlineError extends Error {
  readonly code = "deadline_exceeded";

  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = "DeadlineError";
  }
}

/**
 * Settles like `promise`, or rejects with a DeadlineError after `ms`. The underlying work is
 * not cancelled by this; callers that can cancel (dockerode's abortSignal) pass a signal too.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineError(what, ms)), ms);
    // A pending deadline alone must not keep the process alive at shutdown.
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
