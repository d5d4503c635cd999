// The administrator's password hash is passlib's pbkdf2_sha512 exactly, as Odoo verifies it:
// the expected value was computed with Python's hashlib and passlib's adapted base64.
import { describe, expect, it } from "vitest";
import { ERP_PASSWORD_ROUNDS, erpPasswordHash } from "./erp-login.ts";

describe("erpPasswordHash", () => {
  it("matches passlib's pbkdf2_sha512 for a known salt", async () => {
    const salt = Buffer.from(Array.from({ length: 16 }, (_, i) => i));
    expect(await erpPasswordHash("correct horse battery staple", 1000, salt)).toBe(
      "$pbkdf2-sha512$1000$AAECAwQFBgcICQoLDA0ODw$A6AmFIti7CKlYdoPiV9jf1d9llp37o27Wms8Zx8fwMJGCOigJzAthOW3Pg.XF5PnNiYnsQsIz1N5NtynrEm78w",
    );
  });

  it("uses Odoo's 600,000 rounds and a fresh 16-byte salt each time", async () => {
    const a = await erpPasswordHash("same password");
    const b = await erpPasswordHash("same password");
    expect(a).toMatch(new RegExp(`^\\$pbkdf2-sha512\\$${String(ERP_PASSWORD_ROUNDS)}\\$[A-Za-z0-9./]{22}\\$[A-Za-z0-9./]{86}$`));
    expect(a).not.toBe(b);
  });
});
