// An environment's variables on its page, for those who may change the environment: names
// with masked values (a value is never shown after it is set), add or update, delete. They
// reach the ERP at the next deploy.
import { client, ok } from "./api.js";
import { clear, field, fmt, h, onSubmit, table } from "./dom.js";

export function variablesSection(ctx, project, env) {
  const ids = { project_id: project.id, env_id: env.id };
  const list = h("div", { class: "variables-list" });
  const name = h("input", { type: "text", name: "variable-name", placeholder: "SMTP_PASSWORD", autocomplete: "off", spellcheck: "false", required: true });
  const value = h("textarea", { name: "variable-value", rows: "2", autocomplete: "off", spellcheck: "false" });
  const submit = h("button", { type: "submit" }, "Save variable");
  const form = h(
    "form",
    { class: "variable-form" },
    field("Name", name, "Letters, digits and _, not starting with a digit; an existing name is updated"),
    field("Value", value, "Sealed when saved and never shown again"),
    submit,
  );

  async function load() {
    const out = await ok(client.GET("/projects/{project_id}/environments/{env_id}/variables", { params: { path: ids } }));
    if (!ctx.current()) return;
    clear(list);
    if (out.variables.length === 0) {
      list.append(h("p", {}, "No variables."));
      return;
    }
    const rows = out.variables.map((v) => {
      const remove = h("button", { type: "button", class: "secondary danger small" }, "Delete", h("span", { class: "visually-hidden" }, ` ${v.name}`));
      remove.addEventListener("click", async () => {
        remove.disabled = true;
        try {
          await ok(client.DELETE("/projects/{project_id}/environments/{env_id}/variables/{name}", { params: { path: { ...ids, name: v.name } } }));
          ctx.announce(`Deleted ${v.name}. The ERP loses it at the next deploy.`);
          await load();
        } catch (err) {
          ctx.showError(err);
          remove.disabled = false;
        }
      });
      return h("tr", { dataset: { variable: v.name } }, h("th", { scope: "row" }, h("code", {}, v.name)), h("td", { class: "masked" }, v.value_masked), h("td", {}, fmt.time(v.updated_at)), h("td", {}, remove));
    });
    list.append(table("Environment variables", ["Name", "Value", "Updated", ""], rows));
  }

  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const n = name.value.trim();
      await ok(client.PUT("/projects/{project_id}/environments/{env_id}/variables/{name}", { params: { path: { ...ids, name: n } }, body: { value: value.value } }));
      name.value = "";
      value.value = "";
      ctx.announce(`Saved ${n}. It reaches the ERP at the next deploy.`);
      await load();
    }),
  );
  load().catch((err) => ctx.showError(err));
  return h("section", { class: "variables" }, h("h2", {}, "Environment variables"), list, form);
}
