// The signed links of a backup: what they open, for how long, and that an altered one opens nothing.
import { describe, expect, it } from "vitest";
import { manualClock } from "../../lib/clock.ts";
import { createBackupLinks, DOWNLOAD_LINK_TTL_MS } from "./backup-links.ts";

const backup = { id: "6f1c1b4e-1d7c-4e8e-9d0a-0a4c2f1d3b21", organizationId: "0b5f0c44-5a8e-4f57-8d8e-3f4c7a2b9e10" };

describe("backup links", () => {
  const clock = manualClock(new Date("2026-11-26T10:00:00.000Z"));
  const links = createBackupLinks({ secret: "s3cret", clock });

  it("a download link opens its backup until it expires, then download_link_expired", () => {
    const { token, expiresAt } = links.issueDownload(backup);
    expect(expiresAt.getTime() - clock.now().getTime()).toBe(DOWNLOAD_LINK_TTL_MS);
    expect(links.checkDownload(token)).toEqual({ backupId: backup.id });
    expect(token.length).toBeLessThanOrEqual(100);
    clock.advance(DOWNLOAD_LINK_TTL_MS - 1000);
    expect(links.checkDownload(token).backupId).toBe(backup.id);
    clock.advance(1000);
    expect(() => links.checkDownload(token)).toThrow(expect.objectContaining({ code: "download_link_expired" }));
  });

  it("an altered link, one signed with another secret, or another kind of token is download_link_invalid", () => {
    const { token } = links.issueDownload(backup);
    const [body, sig] = token.slice(4).split(".") as [string, string];
    // The same backup with a later expiry, keeping the signature.
    const raw = Buffer.from(body, "base64url");
    raw.writeUInt32BE(raw.readUInt32BE(16) + 86400, 16);
    const later = raw.toString("base64url");
    // The signature's first character changed (its last one's low bits are padding a decoder ignores).
    const flipped = `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`;
    const other = createBackupLinks({ secret: "another", clock }).issueDownload(backup).token;
    const upload = links.issueUpload(backup, 60_000).token;
    for (const forged of [`bkd_${later}.${sig}`, `bkd_${body}.${flipped}`, other, upload, "bkd_x.y", "", `bkd_${body}`]) {
      expect(() => links.checkDownload(forged), forged).toThrow(expect.objectContaining({ code: "download_link_invalid" }));
    }
  });

  it("a signature spelled another way that decodes to the same bytes is download_link_invalid too", () => {
    const { token } = links.issueDownload(backup);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let same = 0;
    for (const c of alphabet) {
      const respelled = `${token.slice(0, -1)}${c}`;
      if (respelled === token) continue;
      // The last character's low 4 bits are padding: 15 other spellings decode to the same signature.
      if (Buffer.from(respelled.split(".")[1]!, "base64url").equals(Buffer.from(token.split(".")[1]!, "base64url"))) same++;
      expect(() => links.checkDownload(respelled), respelled).toThrow(expect.objectContaining({ code: "download_link_invalid" }));
    }
    expect(same).toBe(15);
  });

  it("an upload token is for one backup and expires", () => {
    const { token } = links.issueUpload(backup, 3 * 3600_000);
    expect(links.checkUpload(token, backup.id).backupId).toBe(backup.id);
    expect(() => links.checkUpload(token, "7f1c1b4e-1d7c-4e8e-9d0a-0a4c2f1d3b21")).toThrow(expect.objectContaining({ code: "upload_token_invalid" }));
    expect(() => links.checkUpload(links.issueDownload(backup).token, backup.id)).toThrow(expect.objectContaining({ code: "upload_token_invalid" }));
    clock.advance(3 * 3600_000);
    expect(() => links.checkUpload(token, backup.id)).toThrow(expect.objectContaining({ code: "upload_token_invalid", message: expect.stringMatching(/expired/) }));
  });
});
