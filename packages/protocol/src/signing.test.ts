import { sign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "./canonical.ts";
import { checkSignedCommandShape, COMMAND_TYPES, type SignedCommand } from "./commands.ts";
import { generateKeyPair, keyIdFor } from "./keys.ts";
import {
  commandSigningText,
  signChallenge,
  signCommand,
  verifyChallenge,
  verifyCommand,
  type VerifyOptions,
} from "./signing.ts";
import {
  agentKey,
  controlPlaneKey,
  controlPlaneKeyId,
  NOW,
  OTHER_SERVER_ID,
  SERVER_ID,
  trustedKeys,
  unsignedDeploy,
} from "./test-fixtures.ts";

const options: VerifyOptions = { trustedKeys, serverId: SERVER_ID, now: NOW };
const signed = signCommand(unsignedDeploy(), controlPlaneKey, controlPlaneKeyId);

/** Signs without signCommand's schema check, as a newer or buggy control plane might. */
function signRaw(body: Omit<SignedCommand, "signature">): SignedCommand {
  const signature = sign(null, Buffer.from(commandSigningText(body), "utf8"), controlPlaneKey).toString("base64");
  return { ...body, signature };
}

function codeOf(cmd: SignedCommand, overrides: Partial<VerifyOptions> = {}): string {
  const result = verifyCommand(cmd, { ...options, ...overrides });
  return result.ok ? "ok" : result.code;
}

describe("signCommand / verifyCommand", () => {
  it("round-trips and returns the typed command", () => {
    const result = verifyCommand(signed, options);
    expect(result).toEqual({ ok: true, command: signed });
    if (result.ok && result.command.type === "deploy") {
      expect(result.command.params.resources.workers).toBe(4);
    }
  });

  it("adds key_id and a 64-byte base64 signature", () => {
    expect(signed.key_id).toBe(controlPlaneKeyId);
    expect(Buffer.from(signed.signature, "base64")).toHaveLength(64);
  });

  it("signs the canonical text of everything but the signature", () => {
    const { signature: _signature, ...rest } = signed;
    expect(commandSigningText(signed)).toBe(commandSigningText(rest));
    expect(commandSigningText(signed)).toContain(`"key_id":"${controlPlaneKeyId}"`);
    expect(commandSigningText(signed)).not.toContain("signature");
  });

  it("does not depend on the order fields were built in", () => {
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as unknown as SignedCommand;
    expect(codeOf(reordered)).toBe("ok");
  });

  it("refuses to sign a command that breaks its schema", () => {
    const bad = unsignedDeploy({ params: { ...unsignedDeploy().params, image: "" } });
    expect(() => signCommand(bad, controlPlaneKey, controlPlaneKeyId)).toThrow(/image/);
    expect(() => signCommand(unsignedDeploy({ seq: 0 }), controlPlaneKey, controlPlaneKeyId)).toThrow(TypeError);
  });

  it("rejects an unknown key id", () => {
    const other = generateKeyPair();
    const cmd = signCommand(unsignedDeploy(), other.privateKey, keyIdFor(other.publicKey));
    expect(codeOf(cmd)).toBe("unknown_key");
  });

  it("rejects a key id that is trusted but signed by another key", () => {
    expect(codeOf(signCommand(unsignedDeploy(), agentKey, controlPlaneKeyId))).toBe("bad_signature");
  });

  it("rejects a changed field, a flipped signature bit and a non-canonical signature", () => {
    expect(codeOf({ ...signed, seq: 2 })).toBe("bad_signature");
    const bytes = Buffer.from(signed.signature, "base64");
    bytes[0] = (bytes[0] ?? 0) ^ 0x80;
    expect(codeOf({ ...signed, signature: bytes.toString("base64") })).toBe("bad_signature");
    expect(codeOf({ ...signed, signature: signed.signature.slice(0, -4) })).toBe("bad_signature");
    // Same bytes, different spelling: the last char before "==" carries 4 unused bits.
    const last = signed.signature.at(-3) ?? "A";
    const sibling = String.fromCharCode(last.charCodeAt(0) + 1);
    expect(codeOf({ ...signed, signature: `${signed.signature.slice(0, -3)}${sibling}==` })).toBe("bad_signature");
  });

  it("rejects a field added after signing", () => {
    expect(codeOf({ ...signed, extra: 1 } as SignedCommand)).toBe("bad_signature");
  });

  it("rejects a command for another server", () => {
    expect(codeOf(signed, { serverId: OTHER_SERVER_ID })).toBe("wrong_server");
  });

  it("rejects an expired command, allowing the clock skew", () => {
    const expiry = Date.parse(signed.expires_at);
    expect(codeOf(signed, { now: new Date(expiry + 30_000) })).toBe("ok");
    expect(codeOf(signed, { now: new Date(expiry + 30_001) })).toBe("expired");
    expect(codeOf(signed, { now: new Date(expiry + 1), clockSkewMs: 0 })).toBe("expired");
  });

  it("rejects a command issued too far in the future", () => {
    const issued = Date.parse(signed.issued_at);
    expect(codeOf(signed, { now: new Date(issued - 30_000) })).toBe("ok");
    expect(codeOf(signed, { now: new Date(issued - 30_001) })).toBe("expired");
  });

  it("fails closed on a timestamp that matches the pattern but is no date", () => {
    const cmd = signCommand(unsignedDeploy({ expires_at: "2025-13-45T99:99:99Z" }), controlPlaneKey, controlPlaneKeyId);
    expect(codeOf(cmd)).toBe("expired");
  });

  it("rejects a replayed command id", () => {
    expect(codeOf(signed, { seenCommandIds: (id) => id === signed.command_id })).toBe("replayed");
    expect(codeOf(signed, { seenCommandIds: () => false })).toBe("ok");
  });

  it("rejects an unknown command at or below the highest forgotten seq as stale, and takes any above it", () => {
    expect(codeOf(signed, { forgottenSeq: signed.seq })).toBe("stale_command");
    expect(codeOf(signed, { forgottenSeq: signed.seq + 1 })).toBe("stale_command");
    expect(codeOf(signed, { forgottenSeq: signed.seq - 1 })).toBe("ok");
    expect(codeOf(signed, { forgottenSeq: 0 })).toBe("ok");
  });

  it("rejects a validly signed command of an unknown type or with bad params", () => {
    const withType = (type: string, params: Record<string, unknown>) => signRaw({ ...signed, type, params });
    expect(codeOf(withType("reboot", {}))).toBe("unsupported_command");
    expect(codeOf(withType("logs.tail", { environment_id: signed.params.environment_id, lines: 0 }))).toBe(
      "invalid_params",
    );
    expect(codeOf(withType("diagnostics", { verbose: true }))).toBe("invalid_params");
  });

  it("reports a malformed command as invalid_params without throwing", () => {
    expect(codeOf({ ...signed, seq: -1 })).toBe("invalid_params");
    expect(codeOf({} as SignedCommand)).toBe("invalid_params");
  });

  it("checks in the documented order", () => {
    // Every check fails here; the first one in the order wins, then the next, and so on.
    const everythingWrong = { ...signed, server_id: OTHER_SERVER_ID, key_id: "nope" };
    expect(codeOf(everythingWrong, { now: new Date(0), seenCommandIds: () => true })).toBe("unknown_key");
    const tampered = { ...signed, server_id: OTHER_SERVER_ID };
    expect(codeOf(tampered, { now: new Date(0), seenCommandIds: () => true })).toBe("bad_signature");
    const otherServer = signCommand(unsignedDeploy({ server_id: OTHER_SERVER_ID }), controlPlaneKey, controlPlaneKeyId);
    expect(codeOf(otherServer, { now: new Date(0), seenCommandIds: () => true })).toBe("wrong_server");
    expect(codeOf(signed, { now: new Date(0), seenCommandIds: () => true })).toBe("expired");
    const unknownType = signRaw({ ...signed, type: "reboot" });
    expect(codeOf(unknownType, { seenCommandIds: () => true, forgottenSeq: signed.seq })).toBe("replayed");
    expect(codeOf(unknownType, { forgottenSeq: signed.seq })).toBe("stale_command");
    expect(codeOf(unknownType)).toBe("unsupported_command");
    // Nothing about an unauthenticated or expired command is trusted, its seq included.
    expect(codeOf(everythingWrong, { forgottenSeq: signed.seq })).toBe("unknown_key");
    expect(codeOf(tampered, { forgottenSeq: signed.seq })).toBe("bad_signature");
    expect(codeOf(signed, { now: new Date(0), forgottenSeq: signed.seq })).toBe("expired");
  });
});

describe("verifyCommand properties", () => {
  const maxSafe = Number.MAX_SAFE_INTEGER;
  const tampered: fc.Arbitrary<SignedCommand> = fc.oneof(
    fc.integer({ min: 1, max: maxSafe }).filter((seq) => seq !== signed.seq).map((seq) => ({ ...signed, seq })),
    fc
      .uuid({ version: 4 })
      .filter((id) => id !== signed.command_id)
      .map((command_id) => ({ ...signed, command_id })),
    fc
      .option(fc.string({ minLength: 1, maxLength: 128 }), { nil: null })
      .filter((by) => by !== signed.issued_by)
      .map((issued_by) => ({ ...signed, issued_by })),
    fc
      .constantFrom(...COMMAND_TYPES)
      .filter((type) => type !== signed.type)
      .map((type) => ({ ...signed, type })),
    fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((date) => date.toISOString())
      .filter((at) => at !== signed.expires_at)
      .map((expires_at) => ({ ...signed, expires_at })),
    fc
      .string()
      .filter((image) => image !== signed.params.image)
      .map((image) => ({ ...signed, params: { ...signed.params, image } })),
    fc
      .dictionary(fc.string(), fc.string())
      .filter((env) => canonicalize(env) !== canonicalize(signed.params.env))
      .map((env) => ({ ...signed, params: { ...signed.params, env } })),
    fc
      .tuple(fc.string(), fc.jsonValue())
      .filter(([key]) => !Object.hasOwn(signed.params, key))
      .map(([key, value]) => ({ ...signed, params: { ...signed.params, [key]: value } })),
    fc
      .tuple(fc.string(), fc.jsonValue())
      .filter(([key]) => !Object.hasOwn(signed, key))
      .map(([key, value]) => ({ ...signed, [key]: value })),
  );

  it("any tampered field fails verification", () => {
    fc.assert(
      fc.property(tampered, (cmd) => {
        const result = verifyCommand(cmd, options);
        expect(result.ok).toBe(false);
        // Unless the change also broke the shape (caught first), it is the signature that fails.
        if (checkSignedCommandShape.Check(cmd)) expect(result).toMatchObject({ code: "bad_signature" });
      }),
    );
  });

  it("any generated command signs and verifies", () => {
    fc.assert(
      fc.property(
        fc.uuid({ version: 4 }),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,15}$/), fc.string()),
        fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: null }),
        (commandId, seq, env, issuedBy) => {
          const cmd = signCommand(
            unsignedDeploy({ command_id: commandId, seq, issued_by: issuedBy, params: { ...unsignedDeploy().params, env } }),
            controlPlaneKey,
            controlPlaneKeyId,
          );
          expect(codeOf(cmd)).toBe("ok");
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe("challenge signatures", () => {
  const nonce = Buffer.alloc(32, 1).toString("base64");
  const agent = generateKeyPair();

  it("verifies the agent's signature", () => {
    const signature = signChallenge(nonce, SERVER_ID, agent.privateKey);
    expect(verifyChallenge(nonce, SERVER_ID, signature, agent.publicKey)).toBe(true);
  });

  it("binds the signature to nonce, server and key", () => {
    const signature = signChallenge(nonce, SERVER_ID, agent.privateKey);
    expect(verifyChallenge(Buffer.alloc(32, 2).toString("base64"), SERVER_ID, signature, agent.publicKey)).toBe(false);
    expect(verifyChallenge(nonce, OTHER_SERVER_ID, signature, agent.publicKey)).toBe(false);
    expect(verifyChallenge(nonce, SERVER_ID, signature, generateKeyPair().publicKey)).toBe(false);
  });

  it("returns false on garbage instead of throwing", () => {
    expect(verifyChallenge(nonce, SERVER_ID, "not base64!", agent.publicKey)).toBe(false);
    expect(verifyChallenge(nonce, SERVER_ID, "", agent.publicKey)).toBe(false);
    expect(verifyChallenge("\ud800", SERVER_ID, "", agent.publicKey)).toBe(false);
  });
});
