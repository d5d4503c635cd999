// A CLI test file's world: a real control plane listening on 127.0.0.1, a demo organisation
// (server, project, two environments, API keys) and its owner signed in, for `berth` run as
// its own process against it.
import { afterAll, beforeAll } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "./control-plane.ts";
import { addPerson, type Person } from "./people.ts";
import { urlOf } from "./sse.ts";

export interface CliSuite {
  cp: TestControlPlane;
  /** http://127.0.0.1:<port> */
  base: string;
  d: DemoOrganization;
  owner: Person;
}

/** Registers beforeAll/afterAll; the fields are set once beforeAll has run. */
export function cliSuite(): CliSuite {
  const suite = {} as CliSuite;
  beforeAll(async () => {
    suite.cp = await startControlPlane({ listen: true });
    suite.base = urlOf(suite.cp);
    suite.d = await createDemoOrganization(suite.cp.database.db, suite.cp.app.services);
    suite.owner = await addPerson(suite.cp.app, "org_owner", { organizationId: suite.d.organization_id });
  });
  afterAll(async () => {
    await suite.cp?.close();
  });
  return suite;
}
