// The instance master key encrypts secrets at rest (command-signing private keys).
// Every replica needs the same one: BERTH_MASTER_KEY (32 bytes, base64), or a 0600 file in
// the data directory created on first start for single-machine installs.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** BERTH_MASTER_KEY when set (config/settings.ts parses it), else the key file in the data directory. */
export function loadMasterKey(opts: { key?: Buffer | undefined; dataDir: string }): Buffer {
  if (opts.key) return opts.key;
  const file = path.join(opts.dataDir, "master.key");
  if (!existsSync(file)) {
    mkdirSync(opts.dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  }
  return parseKey(readFileSync(file, "utf8").trim(), file);
}

export function parseKey(text: string, where: string): Buffer {
  const key = Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error(`${where} must hold 32 bytes, base64-encoded (openssl rand -base64 32)`);
  return key;
}

/** AES-256-GCM; output is iv.tag.ciphertext, each base64. */
export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString("base64")).join(".");
}

export function open(key: Buffer, sealed: string): string {
  const [iv, tag, body] = sealed.split(".").map((p) => Buffer.from(p, "base64"));
  if (!iv || !tag || !body) throw new Error("sealed secret is malformed");
  const decipher = createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
}
