// Enrolment: trade a one-time token for this server's identity. The agent makes its own key
// pair (the private key never leaves the machine), reports its host facts, and pins the
// command-signing keys the control plane answers with.
import { existsSync, renameSync } from "node:fs";
import { Compile } from "typebox/compile";
import {
  AGENT_ENROLL_PATH,
  EnrollRequest,
  EnrollResponse,
  exportPrivateKey,
  exportPublicKey,
  firstError,
  generateKeyPair,
  importPublicKey,
  keyIdFor,
  type HostFacts,
} from "@berth/protocol";
import type { Clock } from "../clock.ts";
import type { ControlPlaneUrl } from "../config/control-plane-url.ts";
import { identityExists, peekServerId, saveIdentity, type Identity } from "../state/identity.ts";
import type { StatePaths } from "../state/state-dir.ts";
import { AGENT_VERSION } from "../version.ts";

const checkRequest = Compile(EnrollRequest);
const checkResponse = Compile(EnrollResponse);
const REQUEST_TIMEOUT_MS = 30_000;

/** exitCode 2: refused before doing anything; 1: the enrolment itself failed. */
export class EnrollError extends Error {
  readonly exitCode: 1 | 2;

  constructor(exitCode: 1 | 2, message: string) {
    super(message);
    this.name = "EnrollError";
    this.exitCode = exitCode;
  }
}

export interface EnrollDeps {
  url: ControlPlaneUrl;
  token: string;
  paths: StatePaths;
  force: boolean;
  fetch: typeof fetch;
  hostFacts: () => Promise<HostFacts>;
  clock: Clock;
  /** Progress lines for the person at the terminal. */
  say: (line: string) => void;
}

export async function enroll(deps: EnrollDeps): Promise<Identity> {
  const { paths } = deps;
  if (identityExists(paths) && !deps.force) {
    const known = peekServerId(paths.identity);
    const as = known === null ? "" : ` as ${known}`;
    throw new EnrollError(2, `this server is already enrolled${as} (${paths.identity}); pass --force to enrol it again`);
  }

  const keys = generateKeyPair();
  const host = await deps.hostFacts();
  deps.say(`Enrolling ${host.hostname} (${host.os}, ${host.cpu_cores} cores, ${host.ram_mb} MB RAM) with ${deps.url.http}`);
  const request: EnrollRequest = {
    token: deps.token,
    public_key: exportPublicKey(keys.publicKey),
    agent_version: AGENT_VERSION,
    host,
  };
  if (!checkRequest.Check(request)) {
    throw new EnrollError(1, `enrolment request is invalid (${firstError(checkRequest, request)}); this is a bug in the agent`);
  }

  const response = await post(deps, request);
  const identity: Identity = {
    server_id: response.server_id,
    control_plane_url: deps.url.http,
    connect_path: response.connect_path,
    signing_keys: response.signing_keys,
    enrolled_at: deps.clock.now().toISOString(),
  };
  if (deps.force) setAsidePreviousJournal(paths, peekServerId(paths.identity));
  saveIdentity(paths, identity, exportPrivateKey(keys.privateKey));
  return identity;
}

async function post(deps: EnrollDeps, request: EnrollRequest): Promise<EnrollResponse> {
  const url = `${deps.url.http}${AGENT_ENROLL_PATH}`;
  let res: Response;
  try {
    res = await deps.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(request),
      // A redirect could carry the token to another place, or from https to http.
      redirect: "error",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new EnrollError(1, `cannot reach the control plane at ${url}: ${networkReason(error)}`);
  }
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw new EnrollError(1, refusal(res.status, body));
  if (!checkResponse.Check(body)) {
    throw new EnrollError(1, `the control plane's answer is not an enrolment (${body === null ? "not JSON" : firstError(checkResponse, body)})`);
  }
  checkSigningKeys(body);
  if (!/^\/(?!\/)/.test(body.connect_path)) {
    throw new EnrollError(1, `the control plane gave an invalid connect path "${body.connect_path}"`);
  }
  return body;
}

// A key id that does not belong to its key would make "which key signed this" meaningless.
function checkSigningKeys(response: EnrollResponse): void {
  for (const key of response.signing_keys) {
    let id: string;
    try {
      id = keyIdFor(importPublicKey(key.public_key));
    } catch {
      throw new EnrollError(1, `the control plane sent a signing key that is not an Ed25519 key (${key.key_id})`);
    }
    if (id !== key.key_id) throw new EnrollError(1, `the control plane sent signing key ${key.key_id} under the wrong id`);
  }
}

const REFUSALS: Record<string, string> = {
  invalid_enrollment_token: "the enrolment token was not recognised: check it was copied whole, or create a new one",
  enrollment_token_expired: "the enrolment token has expired: create a new one and run enroll again",
  enrollment_token_used: "the enrolment token was already used (each enrols one server once): create a new one",
};

function refusal(status: number, body: unknown): string {
  const fields = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const code = typeof fields.error === "string" ? fields.error : typeof fields.code === "string" ? fields.code : null;
  const message = typeof fields.message === "string" ? fields.message : null;
  if (code !== null && REFUSALS[code] !== undefined) return REFUSALS[code];
  if (code === "validation_error") return `the control plane refused the enrolment request: ${message ?? "validation error"}`;
  return `enrolment failed: HTTP ${status}${code === null ? "" : ` ${code}`}${message === null ? "" : `: ${message}`}`;
}

function networkReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : error.message;
}

// Events still in the journal belong to the previous identity; sending them under the new
// one would mix two servers' histories. Kept aside rather than deleted, for an inquiry.
function setAsidePreviousJournal(paths: StatePaths, previousServerId: string | null): void {
  if (!existsSync(paths.journal)) return;
  const suffix = `previous-${previousServerId ?? "unknown"}-${Date.now()}`;
  for (const ext of ["", "-wal", "-shm"]) {
    const from = `${paths.journal}${ext}`;
    if (existsSync(from)) renameSync(from, `${paths.journal.replace(/\.db$/, "")}.${suffix}.db${ext}`);
  }
}
