// `berth-agent enroll` against a control plane on a real HTTP port, and `status` after it.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Compile } from "typebox/compile";
import { EnrollRequest, exportPublicKey, importPrivateKey, publicKeyOf } from "@berth/protocol";
import { openJournal } from "../journal/journal.ts";
import { startFakeControlPlane, type FakeControlPlane } from "../link/fake-control-plane.test-helpers.ts";
import { loadIdentity } from "../state/identity.ts";
import { statePaths } from "../state/state-dir.ts";
import { exitOf, runCli, spawnCli } from "./cli.test-helpers.ts";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("berth-agent enroll", () => {
  let root = "";
  let dir = "";
  let cp: FakeControlPlane;
  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), "berth-enroll-"));
    dir = join(root, "state");
    cp = await startFakeControlPlane();
  });
  afterEach(async () => {
    await cp.close();
    rmSync(root, { recursive: true, force: true });
  });

  const enroll = (...extra: string[]) => runCli(["enroll", "--url", cp.url, "--token", "tok-1", "--state-dir", dir, ...extra]);

  it("enrols over HTTP, keeps its private key to itself and pins the control plane's keys", async () => {
    const { code, out, err } = await enroll();
    expect(err).toEqual([]);
    expect(code).toBe(0);

    const paths = statePaths(dir);
    expect(mode(dir)).toBe(0o700);
    expect(mode(paths.privateKey)).toBe(0o600);
    expect(mode(paths.identity)).toBe(0o600);

    const [request] = cp.enrollRequests;
    expect(Compile(EnrollRequest).Check(request)).toBe(true);
    expect(request).toMatchObject({
      token: "tok-1",
      agent_version: "0.1.0",
      host: { hostname: expect.any(String), cpu_cores: expect.any(Number), docker_version: expect.any(String) },
    });
    expect(request?.host.ram_mb).toBeGreaterThan(0);
    expect(request?.host.disk_gb).toBeGreaterThan(0);

    const loaded = loadIdentity(paths);
    expect(loaded.identity).toMatchObject({
      control_plane_url: cp.url,
      connect_path: "/agent/v1/connect",
      signing_keys: [{ key_id: cp.signing.keyId, public_key: exportPublicKey(cp.signing.publicKey) }],
    });
    expect(out.join("\n")).toContain(`Enrolled as server ${loaded.identity.server_id}`);
    // What the control plane was told is the public half of the key kept here.
    const kept = importPrivateKey(readFileSync(paths.privateKey, "utf8"));
    expect(exportPublicKey(publicKeyOf(kept))).toBe(request?.public_key);
    expect([...loaded.trustedKeys.keys()]).toEqual([cp.signing.keyId]);
  });

  it("refuses to replace an identity unless --force, and then sets the old journal aside", async () => {
    expect((await enroll()).code).toBe(0);
    const paths = statePaths(dir);
    const first = loadIdentity(paths).identity.server_id;
    openJournal({ path: paths.journal }).close();

    const again = await enroll();
    expect(again.code).toBe(2);
    expect(again.err).toEqual([`berth-agent: this server is already enrolled as ${first} (${paths.identity}); pass --force to enrol it again`]);
    expect(loadIdentity(paths).identity.server_id).toBe(first);

    const forced = await enroll("--force");
    expect(forced.code).toBe(0);
    expect(loadIdentity(paths).identity.server_id).not.toBe(first);
    expect(existsSync(paths.journal)).toBe(false);
  });

  it.each([
    ["invalid_enrollment_token", "was not recognised"],
    ["enrollment_token_expired", "has expired: create a new one"],
    ["enrollment_token_used", "was already used"],
  ])("explains a %s refusal and writes nothing", async (error, message) => {
    cp.settings.enroll = () => ({ status: 401, body: { error, message: "nope" } });
    const { code, err } = await enroll();
    expect(code).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain(message);
    expect(existsSync(statePaths(dir).identity)).toBe(false);
  });

  it("refuses an answer that is not an enrolment", async () => {
    cp.settings.enroll = () => ({ status: 201, body: { server_id: "not-a-uuid" } });
    const { code, err } = await enroll();
    expect(code).toBe(1);
    expect(err[0]).toContain("not an enrolment");
  });

  it("refuses http:// to another machine before touching anything, with exit code 2", async () => {
    const { code, err } = await runCli(["enroll", "--url", "http://berth.example.com", "--token", "t", "--state-dir", dir]);
    expect(code).toBe(2);
    expect(err).toEqual([
      "berth-agent: refusing http:// to berth.example.com, which is not this machine: use https:// (or --insecure, for tests only)",
    ]);
    expect(existsSync(dir)).toBe(false);
    expect(cp.enrollRequests).toHaveLength(0);
  });

  it("does the same as a real process: one line on stderr, exit code 2", async () => {
    const child = spawnCli(["enroll", "--url", "http://berth.example.com", "--token", "t", "--state-dir", dir]);
    expect(await exitOf(child)).toEqual({ code: 2, signal: null });
    expect(child.output().trim()).toBe(
      "berth-agent: refusing http:// to berth.example.com, which is not this machine: use https:// (or --insecure, for tests only)",
    );
  });

  it("says what is wrong with the invocation", async () => {
    expect(await runCli(["--version"])).toMatchObject({ code: 0, out: ["0.1.0"] });
    expect(await runCli(["launch"])).toMatchObject({ code: 2, err: ['berth-agent: unknown command "launch" (see --help)'] });
    expect((await runCli(["run", "--bogus"])).code).toBe(2);
    expect(await runCli(["run", "--state-dir", dir])).toMatchObject({
      code: 2,
      err: [expect.stringContaining("this server is not enrolled")],
    });
  });

  it("status shows the server id and that no agent runs yet", async () => {
    expect((await enroll()).code).toBe(0);
    const { code, out } = await runCli(["status", "--state-dir", dir]);
    expect(code).toBe(0);
    const serverId = loadIdentity(statePaths(dir)).identity.server_id;
    expect(out).toEqual([`server:   ${serverId}`, "agent:    not running", "journal:  none yet"]);
  });
});
