import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { CLOSE_CODES, exportPublicKey, generateKeyPair, signChallenge } from "@berth/protocol";
import { checkHello } from "./handshake.ts";

const serverId = randomUUID();
const agentKey = generateKeyPair();
const enrolled = { agent_public_key: exportPublicKey(agentKey.publicKey), last_event_seq: "41" };
const nonce = "bm9uY2Utb2YtdGhpcy1jb25uZWN0aW9u";

const hello = (over: { server_id?: string; challenge_signature?: string; protocol_versions?: number[] } = {}) => ({
  server_id: serverId,
  challenge_signature: signChallenge(nonce, serverId, agentKey.privateKey),
  protocol_versions: [1],
  ...over,
});

describe("checkHello", () => {
  it("opens the link in the highest version both speak, resending events after the stored watermark", () => {
    expect(checkHello(nonce, hello({ protocol_versions: [1, 2, 3] }), enrolled, [1, 2])).toEqual({ ok: true, version: 2, resendFrom: 42 });
    expect(checkHello(nonce, hello(), { ...enrolled, last_event_seq: "0" })).toEqual({ ok: true, version: 1, resendFrom: 1 });
  });

  it("refuses a signature of another connection's challenge, by another key, or for another server", () => {
    const other = generateKeyPair();
    for (const signature of [
      signChallenge("another-nonce", serverId, agentKey.privateKey),
      signChallenge(nonce, serverId, other.privateKey),
      signChallenge(nonce, randomUUID(), agentKey.privateKey),
      "not a signature",
    ]) {
      expect(checkHello(nonce, hello({ challenge_signature: signature }), enrolled)).toMatchObject({
        ok: false,
        code: "auth_failed",
        closeCode: CLOSE_CODES.auth_failed,
      });
    }
  });

  it("refuses a server that does not exist (or was deleted) or never enrolled, alike", () => {
    expect(checkHello(nonce, hello(), undefined)).toMatchObject({ ok: false, code: "auth_failed" });
    expect(checkHello(nonce, hello(), { agent_public_key: null, last_event_seq: "0" })).toMatchObject({ ok: false, code: "auth_failed" });
  });

  it("refuses an agent that shares no protocol version, saying which ones the control plane speaks", () => {
    expect(checkHello(nonce, hello({ protocol_versions: [7, 8] }), enrolled, [1, 2])).toEqual({
      ok: false,
      code: "no_common_version",
      message: "control plane speaks 1, 2",
      closeCode: CLOSE_CODES.no_common_version,
      reason: "no common protocol version",
    });
  });

  it("checks who is calling before anything else: an unauthenticated agent learns no versions", () => {
    const forged = hello({ challenge_signature: signChallenge(nonce, serverId, generateKeyPair().privateKey), protocol_versions: [7] });
    expect(checkHello(nonce, forged, enrolled)).toMatchObject({ ok: false, code: "auth_failed" });
  });
});
