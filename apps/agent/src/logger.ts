// The agent's own log (stdout, JSON lines via pino, read by journald). Distinct from `log`
// events, which go to the control plane. Modules take the small interface below, so a test
// can hand in a recorder instead of pino.
import { pino } from "pino";

export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const LOG_LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number];

export function createLogger(level: LogLevelName): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}

export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  fields: object;
  message: string;
}

/** A logger that keeps what it is told, for tests that check what was logged. */
export function recordingLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry["level"]) => (fields: object, message: string) => {
    entries.push({ level, fields, message });
  };
  return { entries, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
