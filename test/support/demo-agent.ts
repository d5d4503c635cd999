// A demo organisation whose server has a simulated agent connected over the real link, for
// tests of what agents report and receive. Apart from sim-agent.ts, which the fleet
// benchmark's agent processes load without the control plane.
import { createDemoOrganization } from "@berth/control-plane";
import type { SignedCommand } from "@berth/protocol";
import type { TestControlPlane } from "./control-plane.ts";
import { SimAgent, type SimAgentOptions } from "./sim-agent.ts";
import { waitForValue } from "./wait.ts";

/**
 * A fresh demo organisation whose server has an enrolled, connected simulated agent that
 * pings every 300 ms; `stop` ends both.
 */
export async function demoOrganizationWithAgent(cp: TestControlPlane, baseUrl: string, onCommand?: SimAgentOptions["onCommand"]) {
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const token = await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  const agent = new SimAgent({ baseUrl, token: token.token, ...(onCommand ? { onCommand } : {}) });
  await agent.enroll();
  await agent.connect();
  const pinger = setInterval(() => agent.ping(), 300);
  return { d, agent, stop: () => (clearInterval(pinger), agent.close()) };
}

/**
 * The same, with every command its agent receives recorded (then passed to `answer`), and
 * `commandFor(deploymentId)`: the command of that operation once it arrived.
 */
export async function demoOrganizationRecordingCommands(cp: TestControlPlane, baseUrl: string, answer?: SimAgentOptions["onCommand"]) {
  const commands: SignedCommand[] = [];
  const org = await demoOrganizationWithAgent(cp, baseUrl, (cmd, a) => {
    commands.push(cmd);
    answer?.(cmd, a);
  });
  const commandFor = (deploymentId: string) =>
    waitForValue(`the command of ${deploymentId}`, () => commands.find((c) => (c.params as { deployment_id?: string }).deployment_id === deploymentId));
  return { ...org, commands, commandFor };
}
