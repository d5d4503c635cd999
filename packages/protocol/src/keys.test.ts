import { sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  exportPrivateKey,
  exportPublicKey,
  generateKeyPair,
  importPrivateKey,
  importPublicKey,
  keyIdFor,
  privateKeyFromSeed,
  publicKeyOf,
} from "./keys.ts";

// RFC 8032 section 7.1, TEST 1: secret key, public key, and the signature of the empty message.
const RFC_SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const RFC_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const RFC_SIGNATURE =
  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

describe("keys", () => {
  it("derives the RFC 8032 key and signature from a seed", () => {
    const key = privateKeyFromSeed(Buffer.from(RFC_SEED, "hex"));
    expect(Buffer.from(exportPublicKey(key), "base64").toString("hex")).toBe(RFC_PUBLIC);
    expect(sign(null, Buffer.alloc(0), key).toString("hex")).toBe(RFC_SIGNATURE);
  });

  it("round-trips public keys as raw base64 and private keys as PKCS#8 PEM", () => {
    const { publicKey, privateKey } = generateKeyPair();
    const text = exportPublicKey(publicKey);
    expect(Buffer.from(text, "base64")).toHaveLength(32);
    expect(exportPublicKey(importPublicKey(text))).toBe(text);
    const pem = exportPrivateKey(privateKey);
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const restored = importPrivateKey(pem);
    const signature = sign(null, Buffer.from("x"), restored);
    expect(verify(null, Buffer.from("x"), importPublicKey(text), signature)).toBe(true);
  });

  it("names a key by the first 16 hex digits of sha256 of its raw bytes", () => {
    const { publicKey, privateKey } = generateKeyPair();
    const id = keyIdFor(publicKey);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(keyIdFor(exportPublicKey(publicKey))).toBe(id);
    expect(keyIdFor(privateKey)).toBe(id);
    expect(keyIdFor(generateKeyPair().publicKey)).not.toBe(id);
    expect(publicKeyOf(privateKey).type).toBe("public");
  });

  it.each([
    ["too short", Buffer.alloc(31).toString("base64")],
    ["too long", Buffer.alloc(33).toString("base64")],
    ["not canonical base64", `${Buffer.alloc(32).toString("base64")}  `],
  ])("refuses a public key that is %s", (_name, text) => {
    expect(() => importPublicKey(text)).toThrow(TypeError);
  });

  it("refuses a seed that is not 32 bytes and a PEM that is not Ed25519", () => {
    expect(() => privateKeyFromSeed(new Uint8Array(31))).toThrow(TypeError);
    expect(() => importPrivateKey("not a pem")).toThrow();
  });
});
