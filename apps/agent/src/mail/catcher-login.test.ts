// What a deploy writes into odoo.conf for mail: nothing for production, the catcher and the
// environment's own login for staging and development, and a refusal when the catcher's
// address is not known (the ERP would otherwise use a mail server of its image's defaults).
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { catcherLogin } from "./catcher-login.ts";
import { checkMailLogin } from "./mail-credentials.ts";

const ENV = "7d3c1f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const stateDir = mkdtempSync(join(tmpdir(), "berth-mail-login-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));
const mail = { address: () => ({ host: "172.30.0.1", port: 2525 }) };

describe("catcherLogin", () => {
  it("gives production (no catch_mail) no mail settings", async () => {
    expect(await catcherLogin({ stateDir, mail }, ENV, undefined)).toBeUndefined();
  });

  it("gives staging the catcher's address and a login of its own, kept 0600 and the same at every deploy", async () => {
    const first = await catcherLogin({ stateDir, mail }, ENV, true);
    expect(first).toMatchObject({ host: "172.30.0.1", port: 2525, user: ENV });
    expect(first!.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(join(stateDir, "environments", ENV, "smtp-password")).mode & 0o777).toBe(0o600);
    expect((await catcherLogin({ stateDir, mail }, ENV, true))!.password).toBe(first!.password);
    expect(await checkMailLogin(stateDir, ENV, first!.password)).toBe(true);
  });

  it("refuses to deploy a staging environment while the catcher's address is unknown", async () => {
    await expect(catcherLogin({ stateDir, mail: { address: () => null } }, ENV, true)).rejects.toMatchObject({ code: "mail_catcher_unavailable" });
    await expect(catcherLogin({ stateDir }, ENV, true)).rejects.toMatchObject({ code: "mail_catcher_unavailable" });
  });
});
