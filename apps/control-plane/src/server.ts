// Entry point: resolve the database, build the app, listen, print the URL, stop cleanly.
import { createDb } from "@berth/db";
import { buildApp } from "./app.ts";
import { loadConfig } from "./config.ts";
import { resolveDatabase } from "./db/database.ts";
import { loadMasterKey } from "./lib/master-key.ts";

const config = loadConfig();
const log = (msg: string) => process.stdout.write(`berth: ${msg}\n`);
const database = await resolveDatabase(config, log);
const handle = createDb(database.url);
const masterKey = loadMasterKey({ env: process.env.BERTH_MASTER_KEY, dataDir: config.dataDir });
const app = await buildApp({ database: handle, masterKey, logger: { level: config.logLevel } });
const address = await app.listen({ port: config.port, host: config.host });
log(`control plane listening on ${address}`);
log(`public API docs: ${address}/api/public/v1/docs`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: shutting down`);
    await app.close();
    await handle.close();
    await database.stop();
    process.exit(0);
  });
}
