// The setup the dashboard's environment-page tests share: a real control plane, a demo
// organisation whose server has a simulated agent on the real link, an owner and a project
// member, and headless Chromium; every page opened must end without a script error.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import type { SignedCommand } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import { addPerson, type Person } from "../support/people.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { urlOf } from "../support/sse.ts";
import { launchBrowser, openPage, signIn, type TestPage } from "./browser.ts";

export interface DashboardSuite {
  cp: TestControlPlane;
  base: string;
  d: DemoOrganization;
  agent: SimAgent;
  owner: Person;
  member: Person;
  browser: Browser;
  /** A new page signed in as `person`. */
  pageFor(person: Person): Promise<TestPage>;
}

/** Options of the control plane a suite starts, beyond the ones every suite uses. */
export type SuiteControlPlaneOptions = Omit<NonNullable<Parameters<typeof startControlPlane>[0]>, "listen" | "heartbeatMs" | "baseDomain">;

/** Registers the suite's beforeAll and afterAll; its fields are set once beforeAll has run. */
export function dashboardSuite(onCommand?: (cmd: SignedCommand, agent: SimAgent) => void, controlPlane: SuiteControlPlaneOptions = {}): DashboardSuite {
  const pages: (Page & { scriptErrors: string[] })[] = [];
  let stopAgent: (() => void) | undefined;
  const suite = {
    async pageFor(person: Person) {
      const page = await openPage(suite.browser);
      pages.push(page);
      await signIn(page, suite.base, person.email);
      return page;
    },
  } as DashboardSuite;

  beforeAll(async () => {
    suite.cp = await startControlPlane({ ...controlPlane, listen: true, heartbeatMs: 1000, baseDomain: null });
    suite.base = urlOf(suite.cp);
    const org = await demoOrganizationWithAgent(suite.cp, suite.base, onCommand);
    ({ d: suite.d, agent: suite.agent, stop: stopAgent } = org);
    suite.owner = await addPerson(suite.cp.app, "org_owner", { organizationId: suite.d.organization_id });
    suite.member = await addPerson(suite.cp.app, "project_member", { organizationId: suite.d.organization_id, projectId: suite.d.project_id });
    suite.browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    for (const p of pages) expect(p.scriptErrors).toEqual([]);
    stopAgent?.();
    await suite.browser?.close();
    await suite.cp?.close();
  });

  return suite;
}
