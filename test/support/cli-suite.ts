// A CLI test file's world: a real control plane listening on 127.0.0.1, a demo organisation
// (server, project, two environments, API keys) and its owner signed in, for `berth` run as
// its own process against it.
import { afterAll, beforeAll } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import type { SignedCommand } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "./control-plane.ts";
import { demoOrganizationWithAgent } from "./demo-agent.ts";
import type { SimAgent } from "./sim-agent.ts";
import { addPerson, type Person } from "./people.ts";
import { urlOf } from "./sse.ts";

export interface CliSuite {
  cp: TestControlPlane;
  /** http://127.0.0.1:<port> */
  base: string;
  d: DemoOrganization;
  owner: Person;
}

/**
 * Registers beforeAll/afterAll; the fields are set once beforeAll has run. The demo server has a
 * simulated agent on the real link, which passes the commands it receives to `onCommand`.
 */
export function cliSuite(onCommand?: (cmd: SignedCommand, agent: SimAgent) => void): CliSuite {
  const suite = {} as CliSuite;
  let stopAgent: (() => void) | undefined;
  beforeAll(async () => {
    suite.cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
    suite.base = urlOf(suite.cp);
    ({ d: suite.d, stop: stopAgent } = await demoOrganizationWithAgent(suite.cp, suite.base, onCommand));
    suite.owner = await addPerson(suite.cp.app, "org_owner", { organizationId: suite.d.organization_id });
  });
  afterAll(async () => {
    stopAgent?.();
    await suite.cp?.close();
  });
  return suite;
}
