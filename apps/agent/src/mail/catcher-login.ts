// What a deploy of a staging or development environment writes into odoo.conf for its
// mail (erp-config.ts): where the server's catcher listens and the environment's login.
import { CommandError } from "../executor/runner/handler-types.ts";
import type { ExecutorDeps } from "../executor/runner/executor-deps.ts";
import type { CatcherLogin } from "../executor/deploy/erp-config.ts";
import { mailPassword } from "./mail-credentials.ts";

/** Undefined when the deploy does not catch mail (production); fails when it must but no catcher listens. */
export async function catcherLogin(deps: Pick<ExecutorDeps, "mail" | "stateDir">, environmentId: string, catchMail: boolean | undefined): Promise<CatcherLogin | undefined> {
  if (catchMail !== true) return undefined;
  const address = deps.mail?.address() ?? null;
  // Without the catcher's address the ERP would fall back to odoo.conf's defaults: refused
  // rather than risk a staging ERP mailing real customers through a mail server of the image.
  if (address === null) throw new CommandError("mail_catcher_unavailable", "the server's mail catcher has no address yet (its Docker network could not be made: see the agent's log): a staging or development environment is not deployed without it");
  return { ...address, user: environmentId, password: await mailPassword(deps.stateDir, environmentId) };
}
