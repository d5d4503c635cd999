// The parsers several control-plane settings share (a port, a path, a count, a duration); a
// rule only one setting has (a URL's shape, a bucket name) stays beside its declaration.
import path from "node:path";
import type { SettingsEnv } from "@berth/protocol";

export function port(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
    return n;
  };
}

/** A file or folder; relative ones are taken from where the command was typed (npm runs workspace scripts elsewhere and says where in INIT_CWD). */
export function localPath(raw: string, env: SettingsEnv): string {
  return path.resolve(env.INIT_CWD ?? process.cwd(), raw);
}

export function positiveWhole(name: string) {
  return (raw: string): number => {
    if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}

/** Milliseconds from 0 to `max`. */
export function millis(name: string, max: number) {
  return (raw: string): number => {
    if (!/^[0-9]{1,9}$/.test(raw) || Number(raw) > max) throw new Error(`${name} must be a whole number of milliseconds from 0 to ${max}, got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}

export function days(name: string) {
  return (raw: string): number => {
    if (!/^(?:0|[1-9][0-9]{0,5})$/.test(raw)) throw new Error(`${name} must be a whole number of days (0 keeps for good), got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}
