// Environment parsed once at start; a bad value stops the process with a clear message.
import path from "node:path";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  logLevel: string;
}

function port(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
  return n;
}

export function loadConfig(): Config {
  return {
    port: port("PORT", 3000),
    host: process.env.HOST || "127.0.0.1",
    databaseUrl: process.env.DATABASE_URL || undefined,
    // npm runs workspace scripts in the workspace folder; INIT_CWD is where the user typed the command.
    dataDir: path.resolve(process.env.INIT_CWD ?? process.cwd(), process.env.BERTH_DATA_DIR || ".data"),
    embeddedPgPort: port("BERTH_EMBEDDED_PG_PORT", 54329),
    logLevel: process.env.LOG_LEVEL || "info",
  };
}
