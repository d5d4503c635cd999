// Real agents for tests: a temp state directory, a real journal, real keys, the real Docker
// engine, and a fake control plane on a loopback port. Everything is torn down after each test.
import { randomUUID, sign } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import WebSocket from "ws";
import {
  commandSigningText,
  generateKeyPair,
  signCommand,
  type CommandType,
  type KeyObject,
  type SignedCommand,
  type UnsignedCommand,
} from "@berth/protocol";
import { createDockerClient } from "../docker/docker-client.ts";
import { openJournal } from "../journal/journal.ts";
import type { Journal } from "../journal/journal-types.ts";
import { startFakeControlPlane, type FakeControlPlane } from "../link/fake-control-plane.test-helpers.ts";
import { silentLogger } from "../logger.ts";
import { createAgent, type Agent, type AgentDeps } from "./agent.ts";

export const DOCKER_SOCKET = process.env.BERTH_DOCKER_SOCKET ?? "/var/run/docker.sock";

export interface TestIdentity {
  serverId: string;
  privateKey: KeyObject;
  trustedKeys: Map<string, KeyObject>;
}

export function useAgentHarness() {
  let dir = "";
  let journals: Journal[] = [];
  let agents: Agent[] = [];
  let planes: FakeControlPlane[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "berth-agent-"));
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.shutdown({ commandWaitMs: 100, flushMs: 100 })));
    for (const journal of journals.splice(0)) {
      try {
        journal.close();
      } catch {
        // Closed by the test already.
      }
    }
    await Promise.all(planes.splice(0).map((cp) => cp.close()));
    rmSync(dir, { recursive: true, force: true });
    journals = [];
    agents = [];
    planes = [];
  });

  return {
    dir: () => dir,
    async controlPlane(): Promise<FakeControlPlane> {
      const cp = await startFakeControlPlane();
      planes.push(cp);
      return cp;
    },
    /** A server enrolled with `cp`: its key is trusted there, and cp's signing key here. */
    identity(cp: FakeControlPlane): TestIdentity {
      const { privateKey, publicKey } = generateKeyPair();
      const serverId = randomUUID();
      cp.trust(serverId, publicKey);
      return { serverId, privateKey, trustedKeys: new Map([[cp.signing.keyId, cp.signing.publicKey]]) };
    },
    journal(name = "journal.db"): Journal {
      const journal = openJournal({ path: join(dir, name) });
      journals.push(journal);
      return journal;
    },
    /** A started agent with fast reconnects and no sampler unless asked. */
    agent(cp: FakeControlPlane, identity: TestIdentity, journal: Journal, overrides: Partial<AgentDeps> = {}): Agent {
      const agent = createAgent({
        url: cp.connectUrl,
        serverId: identity.serverId,
        privateKey: identity.privateKey,
        trustedKeys: identity.trustedKeys,
        journal,
        docker: createDockerClient({ socketPath: DOCKER_SOCKET }),
        stateDir: dir,
        WebSocket,
        logger: silentLogger,
        statsIntervalMs: null,
        backoff: { baseMs: 50, capMs: 200 },
        ...overrides,
      });
      agents.push(agent);
      agent.start();
      return agent;
    },
  };
}

let seq = 0;

/** A command signed by `cp`, valid now for five minutes, for `identity`'s server. */
export function signedCommand<T extends CommandType>(
  cp: FakeControlPlane,
  identity: TestIdentity,
  type: T,
  params: UnsignedCommand<T>["params"],
  overrides: Partial<Omit<UnsignedCommand, "type" | "params">> = {},
): SignedCommand {
  const now = Date.now();
  seq += 1;
  const unsigned = {
    command_id: randomUUID(),
    server_id: identity.serverId,
    seq,
    type,
    issued_at: new Date(now - 1_000).toISOString(),
    expires_at: new Date(now + 5 * 60_000).toISOString(),
    issued_by: "user_test",
    params,
    ...overrides,
  } as UnsignedCommand<T>;
  return signCommand(unsigned, cp.signing.privateKey, cp.signing.keyId);
}

/** Signs any body, even one of a type the protocol does not know (signCommand refuses those). */
export function signRaw(body: Omit<SignedCommand, "signature">, privateKey: KeyObject): SignedCommand {
  const signature = sign(null, Buffer.from(commandSigningText(body), "utf8"), privateKey).toString("base64");
  return { ...body, signature };
}
