// Once the control plane is ready, objects built key by key (every reply's and request's
// headers) share V8 hidden classes again, as in any small program: compiling the routes'
// schemas must not use up the transitions of the map all `{}` literals start from
// (lib/response-serializers.ts). When it does, every request builds hidden classes of its own
// until the next full garbage collection (bench:api measured about 10 % of a read's CPU).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

const FIXTURE = fileURLToPath(new URL("./fixtures/hidden-classes.ts", import.meta.url));
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

it("leaves objects built after start-up sharing hidden classes", async () => {
  const child = spawn(process.execPath, ["--allow-natives-syntax", "--import", "tsx", FIXTURE], { env: { ...process.env, DATABASE_URL: db.url }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  expect(code, err).toBe(0);
  expect(JSON.parse(out.trim().split("\n").at(-1)!)).toEqual({ shared: [true, true] });
}, 120_000);
