// `npm run seed:demo -- --json`: creates a fresh demo organisation in the control plane's
// database (DATABASE_URL, or the embedded server `npm start` runs) and prints its ids and keys.
import { loadConfig, seedDemoUrl } from "../config.ts";
import { instanceSecret } from "../db/instance-secrets.ts";
import { systemClock } from "../lib/clock.ts";
import { loadMasterKey } from "../lib/master-key.ts";
import { createServices } from "../services.ts";
import { randomBytes } from "node:crypto";
import { createDemoOrganization } from "./demo-data.ts";
import { openScriptDatabase } from "./script-database.ts";

const json = process.argv.includes("--json");
const config = loadConfig();

const { handle, close } = await openScriptDatabase(config);
try {
  const masterKey = loadMasterKey({ key: config.masterKey, dataDir: config.dataDir });
  const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: await instanceSecret(handle.db, "cursor_secret"), masterKey });
  const demo = await createDemoOrganization(handle.db, services);
  // A person who owns the demo organisation, to sign in to the dashboard and the platform API.
  const owner = { email: `owner-${demo.organization_id.slice(0, 8)}@demo.berth.test`, password: randomBytes(12).toString("base64url") };
  const user = await services.sessions.createUser({ email: owner.email, name: "Demo owner", password: owner.password });
  await services.memberships.addToOrganization(demo.organization_id, user.id, "owner");
  const baseUrl = seedDemoUrl() ?? `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${config.port}`;
  const out = {
    base_url: baseUrl,
    public_api_url: `${baseUrl}/api/public/v1`,
    docs_url: `${baseUrl}/api/public/v1/docs`,
    platform_api_url: `${baseUrl}/api/v1`,
    dashboard_url: `${baseUrl}/`,
    ...demo,
    users: { owner },
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } else {
    process.stdout.write(`Demo organisation ${demo.organization_id}\n`);
    for (const [k, v] of Object.entries(out)) process.stdout.write(`  ${k}: ${typeof v === "object" ? JSON.stringify(v) : v}\n`);
    process.stdout.write(`\nTry: curl -H "Authorization: Bearer ${demo.api_keys.org_ro}" ${baseUrl}/api/public/v1/projects\n`);
  }
} finally {
  await close();
}
