// `npm run erp-images -- [--set 17.0=registry.example.com/odoo:17.0 ...] [--db postgres:16]
// [--db-major 16] [--enterprise 17.0,18.0]`: shows, and lets an administrator change, which
// image runs each ERP version, which PostgreSQL image backs it (and its major, when its tag
// does not start with one), and which ERP images are Enterprise builds (a migration of a
// backup with Enterprise modules needs one, or the Enterprise add-on repository; `--enterprise ""`
// declares none). Uses DATABASE_URL, or the embedded server `npm start` runs.
import { createDb, embeddedUrl, runMigrations } from "@berth/db";
import { loadConfig } from "../config.ts";
import { DomainError } from "../lib/errors.ts";
import { createErpImages } from "../modules/erp-images/erp-images.ts";
import { createErpImagesRepo } from "../modules/erp-images/erp-images.repo.ts";

const args = process.argv.slice(2);
const erp: Record<string, string> = {};
let db: string | undefined;
let dbMajor: number | undefined;
let enterprise: string[] | undefined;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  const value = args[i + 1];
  if (arg === "--set" && value && /^\d+\.\d+=\S+$/.test(value)) {
    const [version, image] = value.split("=") as [string, string];
    erp[version] = image;
    i++;
  } else if (arg === "--db" && value) {
    db = value;
    i++;
  } else if (arg === "--db-major" && value && /^\d+$/.test(value)) {
    dbMajor = Number(value);
    i++;
  } else if (arg === "--enterprise" && value !== undefined) {
    enterprise = value.split(",").filter((v) => v !== "");
    i++;
  } else {
    process.stderr.write("usage: npm run erp-images -- [--set <major.minor>=<image> ...] [--db <postgres image>] [--db-major <n>] [--enterprise <major.minor>,...]\n");
    process.exit(2);
  }
}

const config = loadConfig();
const url = config.databaseUrl ?? embeddedUrl(config.embeddedPgPort);
await runMigrations(url);
const handle = createDb(url, { max: 1 });
let failed = false;
try {
  const images = createErpImages(createErpImagesRepo(handle.db));
  const changes = { erp, ...(db ? { db } : {}), ...(dbMajor !== undefined ? { db_major: dbMajor } : {}), ...(enterprise ? { enterprise } : {}) };
  const map = Object.keys(changes).length > 1 || Object.keys(erp).length > 0 ? await images.set(changes) : await images.get();
  for (const [version, image] of Object.entries(map.erp).sort()) process.stdout.write(`${version}\t${image}${map.enterprise.includes(version) ? "\t(enterprise)" : ""}\n`);
  process.stdout.write(`postgres\t${map.db}${map.db_major !== null ? `\t(PostgreSQL ${map.db_major})` : ""}\n`);
} catch (err) {
  process.stderr.write(`erp-images: ${err instanceof DomainError ? err.message : String(err)}\n`);
  failed = true;
} finally {
  await handle.close();
}
// Explicit: an exit code set on process.exitCode does not survive the tsx launcher here.
process.exit(failed ? 1 : 0);
