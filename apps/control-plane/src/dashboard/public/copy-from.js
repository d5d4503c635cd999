// "Refresh from production" on a staging or development environment's page: after a
// confirmation, POST …/copy-from with the project's production as the source (a copy taken
// now, neutralised and re-keyed; production keeps serving), then the copy operation's page
// follows it as any deployment's does.
import { client, ok } from "./api.js";
import { h, onAction } from "./dom.js";

/** The button, or null where there is nothing to refresh from or the caller may not restore. */
export function refreshFromProductionButton(ctx, project, env) {
  const production = project.environments.find((e) => e.stage === "production");
  if (!production || production.id === env.id || env.stage === "production" || !project.permissions.includes("project.backups.restore")) return null;
  const b = h("button", { type: "button", class: "secondary" }, "Refresh from production", h("span", { class: "visually-hidden" }, ` ${project.name} ${env.name}`));
  b.addEventListener(
    "click",
    onAction(b, ctx.showError, async () => {
      const question =
        `Replace ${env.name}'s database and files with a copy of ${production.name} as it is now? ` +
        `${env.name}'s current data is lost; the copy is neutralised (mail, crons, payment providers off) and ${production.name} keeps serving.`;
      if (!confirm(question)) return;
      const out = await ok(client.POST("/environments/{env_id}/copy-from", { params: { path: { env_id: env.id } }, body: { from_environment_id: production.id } }));
      ctx.announce(`Copying ${production.name} into ${env.name}.`);
      ctx.navigate(`#/deployments/${out.deployment_id}`);
    }),
  );
  return b;
}
