// The support console (portal admins): find an organisation, server or environment, see its
// agent, issue one of the fixed signed commands with a reason; and the audit log, which
// the customer's owners read on their own page.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit, table } from "./dom.js";

const COMMANDS = [
  ["restart", "Restart an environment"],
  ["stop", "Stop an environment"],
  ["start", "Start an environment"],
  ["redeploy", "Redeploy an environment"],
  ["backup", "Back up an environment"],
  ["logs.tail", "Last log lines of an environment's container"],
  ["diagnostics", "Diagnostics of the server"],
];
const FINAL = new Set(["succeeded", "failed", "rejected", "expired", "cancelled"]);

function denied(main, ctx) {
  if (ctx.me.user.is_portal_admin) return false;
  main.append(h("p", {}, "The support console is for portal administrators."));
  return true;
}

function supportNav() {
  return h("p", { class: "crumbs" }, h("a", { href: "#/support" }, "Search"), " · ", h("a", { href: "#/support/audit" }, "Audit log of every organisation"));
}

export async function supportPage(main, ctx) {
  main.append(h("h1", {}, "Support console"));
  if (denied(main, ctx)) return;
  main.append(supportNav());
  const q = h("input", { type: "search", required: true, maxlength: 200, name: "q" });
  const results = h("div", { class: "results", "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Search");
  main.append(
    h(
      "form",
      {
        class: "inline-form card",
        role: "search",
        onsubmit: onSubmit(submit, ctx.showError, async () => {
          sessionStorage.setItem("berth.support.q", q.value);
          render(await ok(client.GET("/support/search", { params: { query: { q: q.value } } })));
        }),
      },
      field("Organisation, server, environment, host name or id", q),
      submit,
    ),
    results,
  );
  q.focus();

  function render(r) {
    const section = (title, items, item) => h("section", { "aria-label": title }, h("h2", {}, `${title} (${items.length})`), items.length === 0 ? h("p", { class: "muted" }, "None found.") : h("ul", { class: "result-list" }, items.map((x) => h("li", {}, item(x)))));
    clear(results).append(
      section("Organisations", r.organizations, (o) => [h("strong", {}, o.name), ` · plan ${o.plan} · `, h("code", {}, o.id)]),
      section("Servers", r.servers, (s) => [h("a", { href: `#/support/servers/${s.id}` }, s.name), " ", badge(s.status), ` · ${s.hostname ?? "no host name"} · ${s.organization_name}`]),
      section("Environments", r.environments, (e) => [
        e.server_id ? h("a", { href: `#/support/servers/${e.server_id}` }, `${e.project_name} / ${e.name}`) : `${e.project_name} / ${e.name}`,
        " ",
        badge(e.status),
        ` · ${e.organization_name}`,
      ]),
    );
  }
  const last = sessionStorage.getItem("berth.support.q");
  if (last) {
    q.value = last;
    render(await ok(client.GET("/support/search", { params: { query: { q: last } } })));
  }
}

export async function supportServerPage(main, ctx, serverId) {
  if (denied(main, ctx)) return;
  const s = await ok(client.GET("/support/servers/{server_id}", { params: { path: { server_id: serverId } } }));
  if (!ctx.current()) return;
  const a = s.agent;
  const st = s.stats;
  main.append(
    supportNav(),
    h("h1", {}, `Server ${s.name}`),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Organisation"),
      h("dd", {}, `${s.organization.name} (plan ${s.organization.plan})`),
      h("dt", {}, "Agent"),
      h("dd", { id: "agent-state" }, badge(a.state), a.connected_at ? ` connected ${fmt.ago(a.connected_at)}` : "", ` · last seen ${fmt.ago(a.last_seen_at)}`),
      h("dt", {}, "Versions"),
      h("dd", {}, `agent ${a.agent_version ?? "–"} · Docker ${a.docker_version ?? "–"} · ${a.os ?? "–"} ${a.arch ?? ""}`),
      h("dt", {}, "Host"),
      h("dd", {}, `${s.hostname ?? "–"} · enrolled ${fmt.time(a.enrolled_at)}`),
      h("dt", {}, "Figures"),
      h("dd", {}, st ? `CPU ${fmt.pct(st.cpu_percent)} · RAM ${fmt.gbFromMb(st.ram_used_mb)} / ${fmt.gbFromMb(st.ram_total_mb)} GB · disk ${fmt.gb(st.disk_used_gb)} / ${fmt.gb(st.disk_total_gb)} GB · load ${fmt.load(st.load1)} · ${fmt.ago(st.sampled_at)}` : "none yet"),
      h("dt", {}, "Environments"),
      h("dd", {}, s.environments.length === 0 ? "none" : s.environments.map((e) => `${e.project_name}/${e.name} (${e.status}${e.is_active ? "" : ", inactive"})`).join(", ")),
    ),
  );

  // ---- command form -------------------------------------------------------------------
  const type = h("select", { name: "type" }, COMMANDS.map(([v, label]) => h("option", { value: v }, `${v}: ${label}`)));
  const active = s.environments.filter((e) => e.is_active);
  const envSelect = h("select", { name: "environment_id" }, active.map((e) => h("option", { value: e.id }, `${e.project_name} / ${e.name} (${e.status})`)));
  const lines = h("input", { type: "number", name: "lines", min: 1, max: 10000, value: 200 });
  const reason = h("textarea", { name: "reason", required: true, minlength: 5, maxlength: 1000, rows: 3 });
  const envField = field("Environment", envSelect);
  const linesField = field("Lines", lines, "How many of the last lines to fetch");
  const outcome = h("div", { class: "outcome", role: "status", "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Issue command");
  const sync = () => {
    envField.hidden = type.value === "diagnostics";
    linesField.hidden = type.value !== "logs.tail";
  };
  type.addEventListener("change", sync);
  sync();
  main.append(
    h(
      "section",
      { class: "card", "aria-labelledby": "cmd-h" },
      h("h2", { id: "cmd-h" }, "Issue a command"),
      h("p", { class: "hint" }, "Commands go through the same signed path as the customer's own. The reason is required and is shown to the organisation's owners in their audit log."),
      h(
        "form",
        {
          onsubmit: onSubmit(submit, ctx.showError, async () => {
            if (reason.value.trim().length < 5) return ctx.showError("Give a reason of at least 5 characters.");
            const body = { type: type.value, reason: reason.value.trim() };
            if (type.value !== "diagnostics") {
              if (!envSelect.value) return ctx.showError("This command needs an environment, and the server has none.");
              body.environment_id = envSelect.value;
            }
            if (type.value === "logs.tail") body.lines = Number(lines.value) || 200;
            const issued = await ok(client.POST("/support/servers/{server_id}/commands", { params: { path: { server_id: serverId } }, body }));
            clear(outcome).append(h("p", {}, badge("pending", "Issued"), ` ${type.value} requested; audit entry ${issued.audit_entry_id.slice(0, 8)}.`));
            reason.value = "";
            ctx.announce(`${type.value} issued.`);
            if (issued.command_id) void follow(issued.command_id);
            void loadCommands();
          }),
        },
        field("Command", type),
        envField,
        linesField,
        field("Reason", reason, "At least 5 characters; the customer's owners read it"),
        h("div", { class: "actions" }, submit),
      ),
      outcome,
    ),
  );

  async function follow(commandId) {
    for (let i = 0; i < 120 && ctx.current(); i++) {
      const c = await ok(client.GET("/support/commands/{command_id}", { params: { path: { command_id: commandId } } })).catch(() => null);
      if (c && FINAL.has(c.state)) {
        const out = c.result && Array.isArray(c.result.lines) ? c.result.lines.join("\n") : c.result ? JSON.stringify(c.result, null, 2) : "";
        clear(outcome).append(
          h("p", {}, badge(c.state), ` ${c.type}: ${c.summary}`),
          c.error ? h("p", { class: "error-text" }, c.error.message) : null,
          out ? h("pre", { class: "output", tabindex: "0", "aria-label": "Command output" }, out) : null,
        );
        void loadCommands();
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  // ---- recent commands ----------------------------------------------------------------
  const commands = h("div", {});
  main.append(h("section", { "aria-labelledby": "recent-h" }, h("h2", { id: "recent-h" }, "Recent commands"), commands));
  function renderCommands(list) {
    clear(commands).append(
      list.length === 0
        ? h("p", {}, "No commands yet.")
        : table(
            "Recent commands, newest first",
            ["When", "Command", "State", "Issued by", "Result"],
            list.map((c) =>
              h(
                "tr",
                {},
                h("td", {}, fmt.time(c.created_at)),
                h("th", { scope: "row" }, c.type),
                h("td", {}, badge(c.state)),
                h("td", {}, c.issued_by),
                h("td", {}, c.error ? `${c.summary}: ${c.error.message}` : c.summary),
              ),
            ),
          ),
    );
  }
  async function loadCommands() {
    const fresh = await ok(client.GET("/support/servers/{server_id}", { params: { path: { server_id: serverId } } })).catch(() => null);
    if (fresh && ctx.current()) renderCommands(fresh.recent_commands);
  }
  renderCommands(s.recent_commands);
}

function auditTable(entries, withOrg) {
  if (entries.length === 0) return h("p", {}, "No entries.");
  return h(
    "table",
    { class: "audit" },
    h("caption", { class: "visually-hidden" }, "Audit log, newest first"),
    h("thead", {}, h("tr", {}, [...["When", "Who", "What", "Target", "Reason", "Result"], ...(withOrg ? ["Organisation"] : [])].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      entries.map((e) =>
        h(
          "tr",
          {},
          h("td", {}, fmt.time(e.created_at)),
          h("td", {}, e.actor ? `${e.actor.name} <${e.actor.email}>` : "system"),
          h("th", { scope: "row" }, e.action),
          h("td", {}, `${e.target.type} ${e.target.name ?? e.target.id}`),
          h("td", {}, e.reason ?? ""),
          h("td", {}, badge(e.result.state), ` ${e.result.summary}`),
          withOrg ? h("td", {}, h("code", {}, e.organization_id.slice(0, 8))) : null,
        ),
      ),
    ),
  );
}

/** An audit log fetched 50 entries at a time; `fetchPage(query)` makes the call. */
async function pagedAudit(main, ctx, fetchPage, withOrg) {
  const box = h("div", {});
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Older entries");
  main.append(box, more);
  const entries = [];
  let cursor = null;
  async function load() {
    const page = await ok(fetchPage({ limit: 50, cursor: cursor ?? undefined }));
    if (!ctx.current()) return;
    entries.push(...page.data);
    cursor = page.pagination.next_cursor;
    clear(box).append(auditTable(entries, withOrg));
    more.hidden = !page.pagination.has_more;
  }
  more.addEventListener("click", () => void load().catch(ctx.showError));
  await load();
}

export async function auditPage(main, ctx) {
  main.append(h("h1", {}, "Audit log"));
  if (!ctx.org) return;
  main.append(h("p", { class: "hint" }, "What support staff did on this organisation's servers and environments, and why."));
  await pagedAudit(main, ctx, (query) => client.GET("/organizations/{organization_id}/audit-log", { params: { path: { organization_id: ctx.org.id }, query } }), false);
}

export async function supportAuditPage(main, ctx) {
  main.append(h("h1", {}, "Audit log of every organisation"));
  if (denied(main, ctx)) return;
  main.append(supportNav());
  await pagedAudit(main, ctx, (query) => client.GET("/support/audit-log", { params: { query } }), true);
}
