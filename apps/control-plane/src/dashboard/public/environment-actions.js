// What can be done to an environment from its row or its page (deploy, start, stop, restart),
// as far as the caller's role in the project allows.
import { client, ok } from "./api.js";
import { h, onAction } from "./dom.js";

/** The environment's action buttons; `after(operation)` runs once a start, stop or restart is queued. */
export function envActions(ctx, project, env, after) {
  const can = (code) => project.permissions.includes(code);
  const buttons = [];
  const label = (verb) => [verb, h("span", { class: "visually-hidden" }, ` ${project.name} ${env.name}`)];
  if (can("project.environments.deploy")) {
    const b = h("button", { type: "button", class: "deploy" }, label("Deploy"));
    b.addEventListener(
      "click",
      onAction(b, ctx.showError, async () => {
        const d = await ok(client.POST("/deployments", { body: { project_id: project.id, environment_id: env.id, git_branch: env.git_branch } }));
        ctx.navigate(`#/deployments/${d.id}`);
      }),
    );
    buttons.push(b);
  }
  if (can("project.environments.operate")) {
    const ops = env.status === "running" ? ["restart", "stop"] : env.status === "stopped" ? ["start"] : [];
    for (const op of ops) {
      const b = h("button", { type: "button", class: "secondary" }, label(op[0].toUpperCase() + op.slice(1)));
      b.addEventListener(
        "click",
        onAction(b, ctx.showError, async () => {
          const d = await ok(client.POST("/environments/{env_id}/actions/{action}", { params: { path: { env_id: env.id, action: op } }, body: {} }));
          ctx.announce(`${op} of ${env.name} queued.`);
          after?.(d);
        }),
      );
      buttons.push(b);
    }
  }
  return buttons;
}

/** The buttons of a table row, or a word when the caller's role allows none. */
export function actionsCell(buttons, none = "none for your role") {
  return buttons.length ? h("div", { class: "row-actions" }, buttons) : h("span", { class: "muted" }, none);
}
