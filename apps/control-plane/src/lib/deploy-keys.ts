// Deploy keys for private add-on repositories: an Ed25519 pair made with node:crypto and
// written in OpenSSH's own formats (the public line a Git host takes, the unencrypted
// "openssh-key-v1" private key ssh reads), so no ssh-keygen is needed on the control plane.
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";

export interface DeployKey {
  /** "ssh-ed25519 AAAA… <comment>": what the user adds to their Git host. */
  publicKey: string;
  /** -----BEGIN OPENSSH PRIVATE KEY-----…: sealed at rest, sent only in signed deploy commands. */
  privateKey: string;
  /** SHA256:… as ssh-keygen -l prints it. */
  fingerprint: string;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function sshString(data: Buffer | string): Buffer {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  return Buffer.concat([u32(bytes.length), bytes]);
}

/** The SSH wire form of an Ed25519 public key. */
function publicBlob(pub: Buffer): Buffer {
  return Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
}

export function fingerprintOf(publicKeyLine: string): string {
  const blob = Buffer.from(publicKeyLine.split(" ")[1] ?? "", "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

export function generateDeployKey(comment: string): DeployKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const pub = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const seed = Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url");
  const safeComment = comment.replace(/[^\x21-\x7e]/g, "-");
  const blob = publicBlob(pub);
  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, blob, sshString(Buffer.concat([seed, pub])), sshString(safeComment)]);
  // Padded with 1, 2, 3, … to the cipher's block size (8 for "none").
  const padding: number[] = [];
  for (let i = 1; (secret.length + padding.length) % 8 !== 0; i++) padding.push(i);
  secret = Buffer.concat([secret, Buffer.from(padding)]);
  const body = Buffer.concat([Buffer.from("openssh-key-v1\0", "binary"), sshString("none"), sshString("none"), sshString(""), u32(1), sshString(blob), sshString(secret)]);
  const lines = body.toString("base64").match(/.{1,70}/g) ?? [];
  const line = `ssh-ed25519 ${blob.toString("base64")} ${safeComment}`;
  return {
    publicKey: line,
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join("\n")}\n-----END OPENSSH PRIVATE KEY-----\n`,
    fingerprint: fingerprintOf(line),
  };
}
