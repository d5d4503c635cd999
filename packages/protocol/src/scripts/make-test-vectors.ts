// Writes test-vectors/*.json: fixed keys, fixed commands, their canonical text, signatures
// and the verdict verifyCommand must reach. Another implementation of the link (or a later
// version of this one) checks itself against these files.
// Run: npx tsx packages/protocol/src/scripts/make-test-vectors.ts
import { sign, type KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { SignedCommand, UnsignedCommand } from "../commands.ts";
import { exportPublicKey, keyIdFor, privateKeyFromSeed, publicKeyOf } from "../keys.ts";
import { commandSigningText, DEFAULT_CLOCK_SKEW_MS, signChallenge, signCommand } from "../signing.ts";

// RFC 8032 section 7.1 test keys 1 and 2: public, well known, never to be trusted anywhere real.
const SEEDS = {
  control_plane: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
  agent: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
} as const;
type KeyName = keyof typeof SEEDS;

const SERVER_ID = "6f1c2a4e-8d3b-4c7a-9e15-2b7d4f0a9c31";
const OTHER_SERVER_ID = "0b8e5d2c-1f4a-4e6b-8c9d-7a3f2e1d0c5b";
const NOW = "2025-03-01T12:00:00.000Z";

export interface CommandVector {
  name: string;
  description: string;
  command: SignedCommand;
  /** canonicalize(command without signature): what the signature covers. */
  signing_text: string;
  verify: {
    server_id: string;
    now: string;
    clock_skew_ms: number;
    trusted_keys: KeyName[];
    seen_command_ids: string[];
    /** The highest seq the agent forgot (VerifyOptions.forgottenSeq); absent: none. */
    forgotten_seq?: number;
  };
  expected: { ok: true } | { ok: false; code: string };
}

export interface CommandVectorFile {
  description: string;
  keys: Record<KeyName, { seed_hex: string; public_key: string; key_id: string }>;
  cases: CommandVector[];
}

export interface ChallengeVectorFile {
  description: string;
  key: { seed_hex: string; public_key: string; key_id: string };
  cases: { nonce: string; server_id: string; signature: string }[];
}

function key(name: KeyName): KeyObject {
  return privateKeyFromSeed(Buffer.from(SEEDS[name], "hex"));
}

function keyInfo(seedHex: string) {
  const publicKey = publicKeyOf(privateKeyFromSeed(Buffer.from(seedHex, "hex")));
  return { seed_hex: seedHex, public_key: exportPublicKey(publicKey), key_id: keyIdFor(publicKey) };
}

/** Signs without schema checks, for the vectors whose point is a command the agent must refuse. */
function signUnchecked(body: Omit<SignedCommand, "signature" | "key_id">, name: KeyName): SignedCommand {
  const withKey = { ...body, key_id: keyIdFor(publicKeyOf(key(name))) };
  const signature = sign(null, Buffer.from(commandSigningText(withKey), "utf8"), key(name)).toString("base64");
  return { ...withKey, signature };
}

const deploy: UnsignedCommand<"deploy"> = {
  command_id: "3c5e7a91-2b4d-4f6e-8a0c-1d3f5b7e9a20",
  server_id: SERVER_ID,
  seq: 42,
  type: "deploy",
  issued_at: "2025-03-01T11:59:30.000Z",
  expires_at: "2025-03-01T12:14:30.000Z",
  issued_by: "user_7b2d",
  params: {
    deployment_id: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
    environment_id: "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b",
    erp_version: "17.0",
    image: "registry.example.com/erp:17.0-20250301",
    git: { url: "https://git.example.com/acme/erp-addons.git", branch: "main", commit: "4f2a9c1e7b3d" },
    resources: { cpu_cores: 1.5, ram_mb: 2048, disk_gb: 20, workers: 2 },
    domain: "erp.acme.example",
    env: { TZ: "Europe/Zurich", COMPANY_NAME: "Müller & Söhne — 東京 ✓", EMPTY: "" },
  },
};

const diagnostics: UnsignedCommand<"diagnostics"> = {
  command_id: "5d7f9b13-4c6e-4a8b-9d1f-3e5a7c9b1d42",
  server_id: SERVER_ID,
  seq: 43,
  type: "diagnostics",
  issued_at: "2025-03-01T11:59:50.000Z",
  expires_at: "2025-03-01T12:04:50.000Z",
  issued_by: null,
  params: {},
};

export function buildCommandVectors(): CommandVectorFile {
  const cpKey = key("control_plane");
  const cpKeyId = keyIdFor(publicKeyOf(cpKey));
  const verifyAs = (overrides: Partial<CommandVector["verify"]> = {}): CommandVector["verify"] => ({
    server_id: SERVER_ID,
    now: NOW,
    clock_skew_ms: DEFAULT_CLOCK_SKEW_MS,
    trusted_keys: ["control_plane"],
    seen_command_ids: [],
    ...overrides,
  });
  const vector = (
    name: string,
    description: string,
    command: SignedCommand,
    expected: CommandVector["expected"],
    verify = verifyAs(),
  ): CommandVector => ({ name, description, command, signing_text: commandSigningText(command), verify, expected });

  const validDeploy = signCommand(deploy, cpKey, cpKeyId);
  const { resources: _resources, ...withoutResources } = deploy.params;
  const flipped = Buffer.from(validDeploy.signature, "base64");
  flipped[10] = (flipped[10] ?? 0) ^ 0x01;

  return {
    description:
      "Ed25519 command signing vectors for the Berth agent link. signing_text is the canonical JSON " +
      "(RFC 8785 style) of the command without its signature; signature is base64 Ed25519 over its UTF-8 bytes.",
    keys: { control_plane: keyInfo(SEEDS.control_plane), agent: keyInfo(SEEDS.agent) },
    cases: [
      vector("valid_deploy", "Deploy with git, env vars and non-ASCII text.", validDeploy, { ok: true }),
      vector(
        "valid_diagnostics",
        "Empty params and a null issued_by.",
        signCommand(diagnostics, cpKey, cpKeyId),
        { ok: true },
      ),
      vector(
        "valid_within_clock_skew",
        "Expired 20 s before now, inside the 30 s skew allowance.",
        signCommand({ ...diagnostics, expires_at: "2025-03-01T11:59:40.000Z" }, cpKey, cpKeyId),
        { ok: true },
      ),
      vector(
        "valid_unknown_top_level_field",
        "A field this version does not know is covered by the signature and tolerated.",
        signUnchecked({ ...diagnostics, priority: "high" } as Omit<SignedCommand, "signature" | "key_id">, "control_plane"),
        { ok: true },
      ),
      vector(
        "tampered_params",
        "params.image changed after signing.",
        { ...validDeploy, params: { ...validDeploy.params, image: "registry.example.com/evil:latest" } },
        { ok: false, code: "bad_signature" },
      ),
      vector(
        "tampered_seq",
        "seq changed after signing.",
        { ...validDeploy, seq: 41 },
        { ok: false, code: "bad_signature" },
      ),
      vector(
        "tampered_signature",
        "One bit of the signature flipped.",
        { ...validDeploy, signature: flipped.toString("base64") },
        { ok: false, code: "bad_signature" },
      ),
      vector(
        "field_added_after_signing",
        "An extra field added after signing.",
        { ...validDeploy, force: true } as SignedCommand,
        { ok: false, code: "bad_signature" },
      ),
      vector(
        "wrong_server",
        "Validly signed for another server.",
        signCommand({ ...deploy, server_id: OTHER_SERVER_ID }, cpKey, cpKeyId),
        { ok: false, code: "wrong_server" },
      ),
      vector(
        "expired",
        "Expired 31 s before now, just outside the skew allowance.",
        signCommand({ ...diagnostics, expires_at: "2025-03-01T11:59:29.000Z" }, cpKey, cpKeyId),
        { ok: false, code: "expired" },
      ),
      vector(
        "not_yet_valid",
        "Issued 31 s in the future.",
        signCommand(
          { ...diagnostics, issued_at: "2025-03-01T12:00:31.000Z", expires_at: "2025-03-01T12:05:31.000Z" },
          cpKey,
          cpKeyId,
        ),
        { ok: false, code: "expired" },
      ),
      vector(
        "unknown_key",
        "Validly signed, but by a key the agent does not trust (the agent's own).",
        signUnchecked(diagnostics, "agent"),
        { ok: false, code: "unknown_key" },
      ),
      vector(
        "replayed",
        "Command id already in the agent's journal.",
        validDeploy,
        { ok: false, code: "replayed" },
        verifyAs({ seen_command_ids: [deploy.command_id] }),
      ),
      vector(
        "stale_command",
        "Unknown command id, but its seq (42) is the highest the agent ran and forgot: a replay of it.",
        validDeploy,
        { ok: false, code: "stale_command" },
        verifyAs({ forgotten_seq: 42 }),
      ),
      vector(
        "valid_above_forgotten_seq",
        "Seq 43 is above the highest forgotten one (42): a new command.",
        signCommand(diagnostics, cpKey, cpKeyId),
        { ok: true },
        verifyAs({ forgotten_seq: 42 }),
      ),
      vector(
        "unsupported_command",
        "Validly signed, but a command type this version does not know.",
        signUnchecked({ ...diagnostics, type: "reboot" } as Omit<SignedCommand, "signature" | "key_id">, "control_plane"),
        { ok: false, code: "unsupported_command" },
      ),
      vector(
        "invalid_params",
        "Validly signed deploy whose params lack resources.",
        signUnchecked(
          { ...deploy, params: withoutResources } as Omit<SignedCommand, "signature" | "key_id">,
          "control_plane",
        ),
        { ok: false, code: "invalid_params" },
      ),
    ],
  };
}

export function buildChallengeVectors(): ChallengeVectorFile {
  const agentKey = key("agent");
  const nonces = ["q83vEjRWeJCrze8SNFZ4kA==", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="];
  return {
    description:
      "Agent handshake signatures: base64 Ed25519 over the UTF-8 bytes of " +
      'canonicalize({ nonce, purpose: "berth-agent-challenge-v1", server_id }).',
    key: keyInfo(SEEDS.agent),
    cases: nonces.map((nonce) => ({ nonce, server_id: SERVER_ID, signature: signChallenge(nonce, SERVER_ID, agentKey) })),
  };
}

export const VECTOR_FILES = {
  "commands.json": buildCommandVectors,
  "challenge.json": buildChallengeVectors,
} as const;

export function vectorPath(file: keyof typeof VECTOR_FILES): string {
  return fileURLToPath(new URL(`../../test-vectors/${file}`, import.meta.url));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [file, build] of Object.entries(VECTOR_FILES)) {
    const path = vectorPath(file as keyof typeof VECTOR_FILES);
    writeFileSync(path, `${JSON.stringify(build(), null, 2)}\n`);
    console.log(`wrote ${path}`);
  }
}
