// Entry point: check the settings, resolve the database, build the app, listen, print the URL;
// on SIGTERM or SIGINT, drain (lifecycle/drain.ts) and exit.
import { createDb } from "@berth/db";
import { SettingsError } from "@berth/protocol";
import { buildApp } from "./app.ts";
import { checkedStartSettings } from "./config/start-checks.ts";
import { resolveDatabase } from "./db/database.ts";
import { createObjectStore } from "./lib/object-store/index.ts";
import { loadMasterKey } from "./lib/master-key.ts";
import { drainOnSignals, drainSettings } from "./lifecycle/drain.ts";

const log = (msg: string) => process.stdout.write(`berth: ${msg}\n`);

// A setting or a folder it names that cannot be used: one line each, no stack trace, exit code 1.
let settings;
try {
  settings = checkedStartSettings();
} catch (err) {
  if (!(err instanceof SettingsError)) throw err;
  for (const problem of err.problems) process.stderr.write(`berth: ${problem}\n`);
  process.stderr.write(`berth: not started: ${err.problems.length === 1 ? "1 setting needs" : `${err.problems.length} settings need`} fixing (every setting: apps/control-plane/docs/settings.md)\n`);
  process.exit(1);
}
const { config } = settings;
const database = await resolveDatabase(config, log);
const handle = createDb(database.url);
const masterKey = loadMasterKey({ key: config.masterKey, dataDir: config.dataDir });
const app = await buildApp({
  database: handle,
  masterKey,
  logger: { level: config.logLevel },
  // A number (hops) is valid at runtime; the option type leaves it out (as in app.ts).
  trustProxy: (settings.trustProxy ?? false) as boolean,
  mail: settings.mail,
  registration: settings.registration,
  agentLimits: settings.agentLimits,
  outboundAllow: settings.outboundAllow,
  baseDomain: settings.baseDomain,
  proxy: settings.proxy,
  backupStore: createObjectStore(settings.backupStore),
  migrationUploadDir: settings.migrationUploadDir,
  metrics: settings.metrics,
});
const address = await app.listen({ port: config.port, host: config.host });
log(`control plane listening on ${address}`);
log(`public API docs: ${address}/api/public/v1/docs`);

drainOnSignals({
  app,
  settings: drainSettings(),
  log,
  release: async () => {
    await handle.close();
    await database.stop();
  },
});
