// Checks the committed vectors in test-vectors/ against this code. Both apps run the same
// files, so if either side's signing or verification drifts, this fails first.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { exportPublicKey, importPublicKey, keyIdFor, privateKeyFromSeed } from "./keys.ts";
import {
  buildChallengeVectors,
  buildCommandVectors,
  vectorPath,
  type ChallengeVectorFile,
  type CommandVectorFile,
} from "./scripts/make-test-vectors.ts";
import { commandSigningText, signCommand, verifyChallenge, verifyCommand } from "./signing.ts";
import type { UnsignedCommand } from "./commands.ts";

const commands = JSON.parse(readFileSync(vectorPath("commands.json"), "utf8")) as CommandVectorFile;
const challenges = JSON.parse(readFileSync(vectorPath("challenge.json"), "utf8")) as ChallengeVectorFile;

describe("command test vectors", () => {
  it("covers every verdict", () => {
    const verdicts = new Set(commands.cases.map((c) => (c.expected.ok ? "ok" : c.expected.code)));
    expect([...verdicts].sort()).toEqual(
      [
        "bad_signature",
        "expired",
        "invalid_params",
        "ok",
        "replayed",
        "stale_command",
        "unknown_key",
        "unsupported_command",
        "wrong_server",
      ],
    );
  });

  it.each(Object.entries(commands.keys))("key %s matches its seed", (_name, key) => {
    const privateKey = privateKeyFromSeed(Buffer.from(key.seed_hex, "hex"));
    expect(exportPublicKey(privateKey)).toBe(key.public_key);
    expect(keyIdFor(key.public_key)).toBe(key.key_id);
  });

  it.each(commands.cases.map((c) => [c.name, c] as const))("%s", (_name, vector) => {
    expect(commandSigningText(vector.command)).toBe(vector.signing_text);
    const trustedKeys = new Map(
      vector.verify.trusted_keys.map((name) => [commands.keys[name].key_id, importPublicKey(commands.keys[name].public_key)]),
    );
    const result = verifyCommand(vector.command, {
      trustedKeys,
      serverId: vector.verify.server_id,
      now: new Date(vector.verify.now),
      clockSkewMs: vector.verify.clock_skew_ms,
      seenCommandIds: (id) => vector.verify.seen_command_ids.includes(id),
      ...(vector.verify.forgotten_seq === undefined ? {} : { forgottenSeq: vector.verify.forgotten_seq }),
    });
    expect(result.ok ? { ok: true } : { ok: false, code: result.code }).toEqual(vector.expected);
  });

  it("reproduces each valid signature (Ed25519 is deterministic)", () => {
    const key = privateKeyFromSeed(Buffer.from(commands.keys.control_plane.seed_hex, "hex"));
    for (const vector of commands.cases.filter((c) => c.name === "valid_deploy" || c.name === "valid_diagnostics")) {
      const { signature, key_id, ...unsigned } = vector.command;
      expect(signCommand(unsigned as UnsignedCommand, key, key_id).signature).toBe(signature);
    }
  });
});

describe("challenge test vectors", () => {
  it.each(challenges.cases.map((c) => [c.nonce, c] as const))("nonce %s", (_nonce, vector) => {
    const publicKey = importPublicKey(challenges.key.public_key);
    expect(verifyChallenge(vector.nonce, vector.server_id, vector.signature, publicKey)).toBe(true);
  });
});

describe("committed vector files", () => {
  it("match what the generator produces", () => {
    expect(commands).toEqual(buildCommandVectors());
    expect(challenges).toEqual(buildChallengeVectors());
  });
});
