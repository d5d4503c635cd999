// installers/control-plane/compose.yaml and its Caddyfile hold together (no compose tool and
// no registry here to start them): Caddy, the only published service, serves BERTH_DOMAIN and
// proxies to the control plane's port in the image; the control plane believes forwarded
// headers from Caddy's address alone; .env.example names every setting compose requires.
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { REPO_ROOT } from "../../installers/build/build-agent.ts";
import { ok } from "./support.ts";

const DIR = path.join(REPO_ROOT, "installers/control-plane");
const compose = readFileSync(path.join(DIR, "compose.yaml"), "utf8");
const containerfile = readFileSync(path.join(DIR, "Containerfile"), "utf8");

/** A top-level service's block of compose.yaml (two-space indented under `services:`). */
function service(name: string): string {
  const block = compose.split(/^services:$/m)[1]?.split(/^\S/m)[0] ?? "";
  const match = block.match(new RegExp(`^  ${name}:\\n((?:    .*\\n|\\n)*)`, "m"));
  if (!match) throw new Error(`compose.yaml has no service ${name}`);
  return match[1]!;
}

it("Caddy serves BERTH_DOMAIN over HTTPS and proxies it to the control plane's port in the image", async () => {
  const adapted = await ok("caddy", ["adapt", "--adapter", "caddyfile", "--config", path.join(DIR, "Caddyfile")], {
    timeout: 30_000,
    env: { ...process.env, BERTH_DOMAIN: "berth.example.test" },
  });
  const config = JSON.parse(adapted) as { apps: { http: { servers: Record<string, { listen: string[]; routes: { match: { host: string[] }[]; handle: unknown[] }[] }> } } };
  const [server] = Object.values(config.apps.http.servers);
  expect(server?.listen).toEqual([":443"]);
  expect(server?.routes[0]?.match).toEqual([{ host: ["berth.example.test"] }]);
  const port = containerfile.match(/BERTH_PORT=(\d+)/)?.[1];
  expect(port).toBe("3000");
  expect(JSON.stringify(server?.routes[0]?.handle)).toContain(`"dial":"control-plane:${port}"`);
});

it("only Caddy publishes ports, and the control plane trusts Caddy's fixed address alone", () => {
  const caddy = service("caddy");
  const cp = service("control-plane");
  const db = service("db");
  expect(caddy).toMatch(/^ {4}ports:/m);
  expect(cp).not.toMatch(/^ {4}ports:/m);
  expect(db).not.toMatch(/^ {4}ports:/m);
  const caddyAddress = caddy.match(/ipv4_address: (\S+)/)?.[1];
  expect(caddyAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  expect(cp.match(/BERTH_TRUST_PROXY: (\S+)/)?.[1]).toBe(caddyAddress);
  const subnet = compose.match(/subnet: (\d+\.\d+\.\d+)\.0\/24/)?.[1];
  expect(caddyAddress!.startsWith(`${subnet}.`)).toBe(true);
  expect(cp).toContain("DATABASE_URL: postgres://berth:${POSTGRES_PASSWORD}@db:5432/berth");
});

it(".env.example names every setting compose.yaml requires", () => {
  const required = [...compose.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]!);
  expect(required.sort()).toEqual(["BERTH_DOMAIN", "BERTH_MASTER_KEY", "POSTGRES_PASSWORD"]);
  const example = readFileSync(path.join(DIR, ".env.example"), "utf8");
  for (const name of required) expect(example).toMatch(new RegExp(`^${name}=`, "m"));
});
