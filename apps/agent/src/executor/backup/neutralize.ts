// A copy of an ERP database (a migration that is not production, a restore of another
// environment's backup) is neutralised and re-keyed before it serves, as Odoo's own restore
// "as a copy" with neutralisation does (odoo/service/db.py restore_db):
//
//   1. the target image's own `odoo neutralize -d <database>` (odoo/cli/neutralize.py), in a
//      one-off container with the environment's configuration and code: it runs each installed
//      module's data/neutralize.sql (odoo/modules/neutralize.py): crons off but the autovacuum,
//      a dummy mail server, webhooks, payment providers, IAP tokens, carriers, template mail
//      servers, calendar syncs, the banner, and whatever Enterprise, l10n or custom modules add.
//      Never a hand-written subset: each version and module knows its own.
//   2. rekey-copy.ts: a new database.uuid and database.secret, the copy's own web.base.url.
//
// It runs on the new database before the swap, so the copy never serves un-neutralised; a
// failure fails the restore, which then leaves the environment as it was.
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentLabels } from "../../docker/labels.ts";
import type { EnvironmentLayout } from "../environment/environment-layout.ts";
import { runErpOnce } from "../deploy/erp-run.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { rekeyCopy } from "./rekey-copy.ts";
import { mailToCatcher } from "../environment/mail-to-catcher.ts";

export interface CopyTarget {
  docker: DockerClient;
  layout: EnvironmentLayout;
  dbContainerId: string;
  /** The image that will serve the copy: its own neutralize knows its modules. */
  image: string;
  /** The new database, not yet swapped in. */
  database: string;
  /** The copy's address (https://<domain>), null when it has none. */
  baseUrl: string | null;
  /** Its mail goes to the server's catcher (a staging or development environment): mail-to-catcher.ts. */
  catchMail: boolean;
  extraLabels: Record<string, string> | undefined;
  deadlineMs: number;
  signal: AbortSignal;
  log: StepScope["log"];
}

/** Neutralises and re-keys the copy; throws `neutralize_failed` when the ERP's neutralize fails. */
export async function neutralizeCopy(target: CopyTarget): Promise<void> {
  const { docker, layout } = target;
  const run = await runErpOnce(
    docker,
    { layout, image: target.image, cmd: ["odoo", "neutralize", "-d", target.database], labels: environmentLabels(layout.environmentId, "erp-run", target.extraLabels), what: "neutralize" },
    { deadlineMs: target.deadlineMs, signal: target.signal, log: target.log },
  );
  if (run.exitCode !== 0) {
    const why = run.killed ? "not done in time" : `exit code ${run.exitCode}`;
    throw new CommandError(
      "neutralize_failed",
      `the ERP's own "odoo neutralize" failed on the copy (${why}), so it is not served; Odoo's last lines:\n${run.tail.slice(-12).join("\n")}`,
    );
  }
  target.log("info", `Neutralised by the image's own odoo neutralize (each installed module's data/neutralize.sql)`);
  target.log("info", await rekeyCopy(docker, target.dbContainerId, target.database, target.baseUrl));
  if (target.catchMail) target.log("info", await mailToCatcher(docker, target.dbContainerId, target.database));
}
