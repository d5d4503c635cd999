// API keys and webhook subscriptions of the organisation: create (the secret is shown
// once), list, revoke or delete.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit, table } from "./dom.js";

const WEBHOOK_EVENTS = ["deploy.completed", "deployment.completed", "deploy.failed", "deployment.failed", "environment.status_changed"];

export function secretBox(title, value, note) {
  return h(
    "div",
    { class: "secret", role: "status" },
    h("strong", {}, title),
    h("pre", { class: "command" }, h("code", { class: "secret-value" }, value)),
    h("p", { class: "hint" }, note),
  );
}

export async function settingsPage(main, ctx) {
  main.append(h("h1", {}, "API keys & webhooks"));
  if (!ctx.org) return;
  const orgId = ctx.org.id;
  if (ctx.can("org.api_keys.manage")) await apiKeys(main, ctx, orgId);
  if (ctx.can("org.webhooks.manage")) await webhooks(main, ctx, orgId);
  if (!ctx.can("org.api_keys.manage") && !ctx.can("org.webhooks.manage"))
    main.append(h("p", {}, "You don't have permission to manage API keys or webhooks here."));
}

async function apiKeys(main, ctx, orgId) {
  const name = h("input", { type: "text", required: true, maxlength: 100 });
  const access = h("select", {}, h("option", { value: "read_only" }, "Read only"), h("option", { value: "full_access" }, "Full access"));
  const shown = h("div", {});
  const list = h("div", {});
  const submit = h("button", { type: "submit" }, "Create API key");
  main.append(
    h(
      "section",
      { class: "card", "aria-labelledby": "keys-h" },
      h("h2", { id: "keys-h" }, "API keys"),
      h(
        "form",
        {
          class: "inline-form",
          onsubmit: onSubmit(submit, ctx.showError, async () => {
            const key = await ok(client.POST("/organizations/{organization_id}/api-keys", { params: { path: { organization_id: orgId } }, body: { name: name.value, access: access.value } }));
            clear(shown).append(secretBox(`New key “${key.name}”`, key.key, "Copy it now: this is the only time the key is shown."));
            name.value = "";
            await load();
          }),
        },
        field("Key name", name),
        field("Access", access),
        submit,
      ),
      shown,
      list,
    ),
  );
  async function load() {
    const page = await ok(client.GET("/organizations/{organization_id}/api-keys", { params: { path: { organization_id: orgId }, query: { limit: 100 } } }));
    if (!ctx.current()) return;
    clear(list).append(
      page.data.length === 0
        ? h("p", {}, "No API keys.")
        : table(
            "API keys",
            ["Name", "Key", "Access", "Created", "Last used", "State", ""],
            page.data.map((k) => {
              const revoke = k.revoked_at
                ? null
                : h(
                    "button",
                    {
                      type: "button",
                      class: "secondary danger",
                      onclick: async () => {
                        if (!confirm(`Revoke the key “${k.name}”? Anything using it stops working.`)) return;
                        try {
                          await ok(client.DELETE("/organizations/{organization_id}/api-keys/{id}", { params: { path: { organization_id: orgId, id: k.id } } }));
                          ctx.announce(`Key ${k.name} revoked.`);
                          await load();
                        } catch (err) {
                          ctx.showError(err);
                        }
                      },
                    },
                    "Revoke",
                    h("span", { class: "visually-hidden" }, ` ${k.name}`),
                  );
              return h(
                "tr",
                {},
                h("th", { scope: "row" }, k.name),
                h("td", {}, h("code", {}, `${k.prefix}…`)),
                h("td", {}, k.access === "full_access" ? "Full access" : "Read only"),
                h("td", {}, fmt.time(k.created_at)),
                h("td", {}, k.last_used_at ? fmt.ago(k.last_used_at) : "never"),
                h("td", {}, k.revoked_at ? badge("revoked", "Revoked") : badge("active", "Active")),
                h("td", {}, revoke),
              );
            }),
          ),
    );
  }
  await load();
}

async function webhooks(main, ctx, orgId) {
  const url = h("input", { type: "url", required: true, maxlength: 2048, placeholder: "https://example.com/hooks/berth" });
  const description = h("input", { type: "text", maxlength: 500 });
  const boxes = WEBHOOK_EVENTS.map((e) => h("input", { type: "checkbox", value: e, id: `ev-${e.replace(/\W/g, "-")}`, checked: e.startsWith("deployment.") }));
  const shown = h("div", {});
  const list = h("div", {});
  const submit = h("button", { type: "submit" }, "Create webhook");
  main.append(
    h(
      "section",
      { class: "card", "aria-labelledby": "hooks-h" },
      h("h2", { id: "hooks-h" }, "Webhook subscriptions"),
      h(
        "form",
        {
          onsubmit: onSubmit(submit, ctx.showError, async () => {
            const events = boxes.filter((b) => b.checked).map((b) => b.value);
            if (events.length === 0) return ctx.showError("Choose at least one event.");
            const w = await ok(client.POST("/organizations/{organization_id}/webhooks", { params: { path: { organization_id: orgId } }, body: { url: url.value, events, description: description.value || null } }));
            clear(shown).append(secretBox(`Signing secret for ${w.url}`, w.secret, "Copy it now: this is the only time the secret is shown."));
            url.value = "";
            description.value = "";
            await load();
          }),
        },
        field("Target URL", url, "HTTPS; plain HTTP only for localhost"),
        field("Description (optional)", description),
        h(
          "fieldset",
          {},
          h("legend", {}, "Events"),
          boxes.map((b) => h("div", { class: "check" }, b, h("label", { for: b.id }, b.value))),
        ),
        h("div", { class: "actions" }, submit),
      ),
      shown,
      list,
    ),
  );
  async function load() {
    const page = await ok(client.GET("/organizations/{organization_id}/webhooks", { params: { path: { organization_id: orgId }, query: { limit: 100 } } }));
    if (!ctx.current()) return;
    clear(list).append(
      page.data.length === 0
        ? h("p", {}, "No webhook subscriptions.")
        : table(
            "Webhook subscriptions",
            ["URL", "Events", "Description", "Created", ""],
            page.data.map((w) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, w.url),
                h("td", {}, w.events.join(", ")),
                h("td", {}, w.description ?? ""),
                h("td", {}, fmt.time(w.created_at)),
                h(
                  "td",
                  {},
                  h(
                    "button",
                    {
                      type: "button",
                      class: "secondary danger",
                      onclick: async () => {
                        if (!confirm(`Delete the webhook to ${w.url}?`)) return;
                        try {
                          await ok(client.DELETE("/organizations/{organization_id}/webhooks/{id}", { params: { path: { organization_id: orgId, id: w.id } } }));
                          ctx.announce("Webhook deleted.");
                          await load();
                        } catch (err) {
                          ctx.showError(err);
                        }
                      },
                    },
                    "Delete",
                    h("span", { class: "visually-hidden" }, ` webhook ${w.url}`),
                  ),
                ),
              ),
            ),
          ),
    );
  }
  await load();
}
