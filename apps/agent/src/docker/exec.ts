// Commands: exec in a running Berth container, and one-off containers run to completion,
// with stdin fed in and output taken out of the same hijacked connection.
import { Writable, type Duplex, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Dockerode from "dockerode";
import type { ContainerCalls, ContainerSpec } from "./containers.ts";
import { ExecDemux } from "./exec-demux.ts";
import { containerName, signalled, type WorkloadContext } from "./workload-context.ts";

export interface ExecOptions {
  deadlineMs: number;
  /** Fed to the command's stdin, which is closed at its end. */
  stdin?: Readable;
  /** Receives stdout (with backpressure); without it stdout is collected, bounded. */
  stdout?: Writable;
  user?: string;
}

export interface ExecResult {
  exitCode: number;
  /** Empty when `stdout` was given. */
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  deadlineMs: number;
  signal?: AbortSignal;
  onLine?: (line: string) => void;
  /** How many of the last output lines the result keeps (default 40). */
  tailLines?: number;
  /**
   * Fed to the container's stdin, which is closed at its end; the run fails with its error if
   * it fails or closes before its end (the container is then killed).
   */
  stdin?: Readable;
  /** Receives stdout; the lines (onLine, tail) are then stderr's only. */
  stdout?: Writable;
}

export interface RunResult {
  exitCode: number;
  /** The last output lines, oldest first. */
  tail: string[];
  /** True when it was killed at its deadline or on the signal. */
  killed: boolean;
}

export interface ExecCalls {
  /** Runs an argument vector (never a shell string) in a running container. */
  exec(id: string, cmd: string[], options: ExecOptions): Promise<ExecResult>;
  /**
   * A one-off container: created from `spec`, started, its output (stdout and stderr) given
   * line by line to `onLine` as it comes, waited for, then removed (with its anonymous
   * volumes) whatever happened. Past the deadline or on `signal` it is killed.
   */
  runToCompletion(spec: ContainerSpec, options: RunOptions): Promise<RunResult>;
}

export function execCalls(
  { docker, d, call, owned }: WorkloadContext,
  containers: Pick<ContainerCalls, "createContainer" | "startContainer">,
): ExecCalls {
  return {
    async exec(id, cmd, options) {
      const info = await owned(id);
      const what = `docker exec ${cmd[0] ?? ""} in ${containerName(info)}`;
      return call(what, options.deadlineMs, async (abortSignal) => {
        const withStdin = options.stdin !== undefined;
        const exec = await docker.getContainer(info.Id).exec(
          signalled(
            {
              Cmd: cmd,
              AttachStdin: withStdin,
              AttachStdout: true,
              AttachStderr: true,
              ...(options.user === undefined ? {} : { User: options.user }),
            },
            abortSignal,
          ),
        );
        const socket = (await exec.start(signalled({ hijack: true, stdin: withStdin }, abortSignal))) as Duplex;
        const stop = () => socket.destroy();
        abortSignal.addEventListener("abort", stop, { once: true });
        try {
          const demux = new ExecDemux();
          const collected = options.stdout === undefined ? boundedSink(256 * 1024) : null;
          const output = pipeline(socket, demux, options.stdout ?? (collected as BoundedSink).sink);
          const input = options.stdin === undefined ? Promise.resolve() : feed(options.stdin, socket);
          await Promise.all([output, input]);
          const exitCode = await exitCodeOf(exec, abortSignal);
          return { exitCode, stdout: collected?.text() ?? "", stderr: demux.stderr() };
        } finally {
          abortSignal.removeEventListener("abort", stop);
          socket.destroy();
        }
      });
    },

    async runToCompletion(spec, options) {
      const withStdin = options.stdin !== undefined;
      const id = await containers.createContainer(withStdin ? { ...spec, openStdin: true } : spec);
      const container = docker.getContainer(id);
      const keep = options.tailLines ?? 40;
      const tail: string[] = [];
      let killed = false;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), options.deadlineMs);
      const onAbort = () => controller.abort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      let pending = "";
      const take = (text: string) => {
        pending += text;
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const raw of lines) {
          const line = raw.replace(/\r$/, "");
          tail.push(line);
          if (tail.length > keep) tail.shift();
          options.onLine?.(line);
        }
      };
      const sink = () =>
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            take(chunk.toString("utf8"));
            done();
          },
        });
      try {
        // Attach before start, so no line is missed.
        // With stdin the connection is hijacked: one socket carries stdin in and the output out.
        const stream = (await call(`docker attach ${spec.name}`, d.change, (abortSignal) =>
          container.attach(
            signalled({ stream: true, stdout: true, stderr: true, logs: true, ...(withStdin ? { stdin: true, hijack: true } : {}) }, abortSignal),
          ),
        )) as Duplex;
        const ended = new Promise<void>((resolve) => {
          stream.on("end", () => resolve());
          stream.on("close", () => resolve());
          stream.on("error", () => resolve());
        });
        docker.modem.demuxStream(stream, options.stdout ?? sink(), sink());
        await containers.startContainer(id);
        let inputFailed: { error: unknown } | null = null;
        if (options.stdin !== undefined) {
          feed(options.stdin, stream).catch((error: unknown) => {
            inputFailed = { error };
            controller.abort();
          });
        }
        const waited = container.wait({ abortSignal: controller.signal } as object) as Promise<{ StatusCode: number }>;
        let exitCode: number;
        try {
          exitCode = (await waited).StatusCode;
        } catch (error) {
          if (!controller.signal.aborted) throw error;
          killed = true;
          await container.kill().catch(() => undefined);
          exitCode = -1;
        }
        if (inputFailed !== null) throw (inputFailed as { error: unknown }).error;
        await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        stream.destroy();
        if (pending !== "") take("\n");
        return { exitCode, tail, killed };
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        await call(`docker rm ${spec.name}`, d.heavy, (abortSignal) =>
          container.remove(signalled({ force: true, v: true }, abortSignal)),
        ).catch(() => undefined);
      }
    },
  };
}

// The exec's stream can end a moment before the engine records the exit code.
async function exitCodeOf(exec: Dockerode.Exec, abortSignal: AbortSignal): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const state = await exec.inspect(signalled({}, abortSignal));
    if (!state.Running && state.ExitCode !== null) return state.ExitCode;
    if (attempt >= 50) return -1;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Pipes `source` into a hijacked socket's stdin, ending it at the source's end. An input that
 * failed before we got here, or closes without its end, fails; the process may exit before
 * reading everything (it failed): that is its exit code's story, not a reason to hang here.
 */
function feed(source: Readable, socket: Duplex): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (source.errored) {
      reject(source.errored);
      return;
    }
    source.once("error", reject);
    source.once("close", () => {
      if (!source.readableEnded) reject(source.errored ?? new Error("the input closed before its end"));
    });
    socket.once("close", () => resolve());
    source.once("end", () => resolve());
    source.pipe(socket, { end: true });
  });
}

interface BoundedSink {
  sink: Writable;
  text(): string;
}

function boundedSink(limit: number): BoundedSink {
  const chunks: Buffer[] = [];
  let size = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (size < limit) {
        const kept = chunk.subarray(0, limit - size);
        chunks.push(Buffer.from(kept));
        size += kept.length;
      }
      callback();
    },
  });
  return { sink, text: () => Buffer.concat(chunks).toString("utf8") };
}
