// Moving an existing ERP in: the organisation's migrations and the form that starts one, and
// a migration's page that walks through it (upload the backup, read its analysis, choose a
// server, start, follow the 12 steps live). Every member reads; owners and admins act.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit, table } from "./dom.js";
import { receivedText, uploadSection } from "./migration-upload.js";
import { analysisReport, STEP_NAMES, stepsSection } from "./migration-report.js";

const SOURCE_LABEL = {
  vendor_paas: "The ERP vendor's platform (PaaS)",
  vendor_online: "The ERP vendor's online (SaaS) edition",
  on_premise: "Our own servers (on premise)",
  other_paas: "Another hosting platform",
};

const STATUS_LABEL = { pending: "waiting for backup", uploading: "uploading", importing: "importing", analyzed: "analysed", ready: "ready to start", processing: "migrating", completed: "completed", failed: "failed", cancelled: "cancelled", unlinked: "unlinked" };
const STATUS_BADGE = { analyzed: "success", ready: "success", processing: "deploying", importing: "pending", uploading: "pending", unlinked: "idle" };

const CONFIGURABLE = new Set(["analyzed", "ready"]);
const FINISHED = new Set(["completed", "cancelled", "unlinked"]);
/** Statuses whose backup has an analysis to read. */
const ANALYSED = new Set(["analyzed", "ready", "processing", "completed"]);

/** current_step in words: the steps before the run, or one of the 12. */
const BEFORE_RUN = { uploading: "receiving the upload", downloading: "downloading from the URL", verifying: "checking size and SHA-256", analyzing: "analysing the backup" };
const stepLabel = (step) => BEFORE_RUN[step] ?? STEP_NAMES.find(([id]) => id === step)?.[1].toLowerCase() ?? step;

const statusBadge = (status) => badge(STATUS_BADGE[status] ?? status, STATUS_LABEL[status] ?? status);

function progressCell(m) {
  return h("span", { class: "progress-cell" }, h("progress", { max: "100", value: String(m.progress_percent), "aria-label": `Progress of ${m.project_name}` }), ` ${m.progress_percent} %`);
}

// ---- list ------------------------------------------------------------------------------

function createForm(ctx) {
  const name = h("input", { type: "text", name: "project_name", required: true, maxlength: "100", autocomplete: "off" });
  const source = h("select", { name: "source_type" }, Object.entries(SOURCE_LABEL).map(([value, label]) => h("option", { value }, label)));
  const repo = h("input", { type: "url", name: "git_repo_url", placeholder: "https://git.example.com/acme/addons.git", autocomplete: "off" });
  const branch = h("input", { type: "text", name: "git_branch", placeholder: "main", autocomplete: "off" });
  // Not `required` in HTML: the API decides, and its own words are shown when it refuses.
  const consent = h("input", { type: "checkbox", name: "data_processing_consent", "aria-required": "true" });
  const submit = h("button", { type: "submit" }, "Create migration");
  const form = h(
    "form",
    { class: "card migration-form", "aria-labelledby": "new-migration-h" },
    h("h2", { id: "new-migration-h" }, "Move an ERP in"),
    h("div", { class: "inline-form" }, field("Project name", name), field("Where it runs now", source)),
    h("div", { class: "inline-form" }, field("Git repository of custom modules", repo, "Optional"), field("Branch", branch, "Optional")),
    h(
      "div",
      { class: "field check" },
      consent,
      h("label", { for: "migration-consent" }, "I agree that Berth stores and processes the backup, which holds personal data, for this migration (required)"),
    ),
    h("div", { class: "actions" }, submit),
  );
  consent.id = "migration-consent";
  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const body = { organization_id: ctx.org.id, source_type: source.value, project_name: name.value.trim(), data_processing_consent: consent.checked };
      if (repo.value.trim()) body.git_repo_url = repo.value.trim();
      if (branch.value.trim()) body.git_branch = branch.value.trim();
      const m = await ok(client.POST("/migrations", { body }));
      ctx.announce(`Migration of ${m.project_name} created.`);
      ctx.navigate(`#/migrations/${m.id}`);
    }),
  );
  return form;
}

export async function migrationsPage(main, ctx) {
  main.append(h("div", { class: "page-head" }, h("h1", {}, "Migrations")));
  if (!ctx.org) {
    main.append(h("p", {}, "You are not a member of any organisation."));
    return;
  }
  if (ctx.can("org.migrations.create")) main.append(createForm(ctx));
  const list = h("div", { class: "migrations" });
  main.append(h("h2", {}, "Migrations of this organisation"), list);

  async function load() {
    const page = await ok(client.GET("/migrations", { params: { query: { organization_id: ctx.org.id, page_size: 100 } } }));
    if (!ctx.current()) return;
    clear(list);
    if (page.items.length === 0) {
      list.append(h("p", {}, "No migrations yet."));
      return;
    }
    list.append(
      table(
        "Migrations, newest first",
        ["Project", "Status", "Progress", "Backup file", "Created"],
        page.items.map((m) =>
          h(
            "tr",
            { dataset: { migrationId: m.id } },
            h("th", { scope: "row" }, h("a", { href: `#/migrations/${m.id}` }, m.project_name)),
            h("td", {}, statusBadge(m.status), m.error_message ? h("span", { class: "muted" }, ` ${m.error_message}`) : null),
            h("td", {}, progressCell(m)),
            h("td", {}, m.file_name ?? h("span", { class: "muted" }, "none yet")),
            h("td", {}, fmt.time(m.created_at)),
          ),
        ),
      ),
    );
    if (page.total > page.items.length) list.append(h("p", { class: "muted" }, `The newest ${page.items.length} of ${page.total}.`));
  }

  let timer = 0;
  ctx.on("migration_progress", () => {
    if (!timer) timer = setTimeout(() => ((timer = 0), void load().catch(ctx.showError)), 300);
  });
  ctx.onCleanup(() => clearTimeout(timer));
  await load();
}

// ---- one migration ----------------------------------------------------------------------

/** Servers with room for the recommendation: choose one (and a domain), then configure. */
async function serverSection(ctx, m, after) {
  const section = h("section", { class: "card migration-server", "aria-labelledby": "server-h" }, h("h2", { id: "server-h" }, "Target server"));
  const servers = await ok(client.GET("/migrations/{migration_id}/available-vms", { params: { path: { migration_id: m.id } } }));
  if (servers.length === 0) {
    section.append(h("p", {}, "No server of this organisation has room for the recommended share. Add a server, or free room on one, then reload."));
    return section;
  }
  const radios = servers.map((s) =>
    h(
      "label",
      { class: "check server-choice" },
      h("input", { type: "radio", name: "target_vm_id", value: s.id, checked: s.id === m.target_vm_id || servers.length === 1 }),
      h("span", {}, h("strong", {}, s.name), s.hostname ? ` (${s.hostname})` : "", h("span", { class: "muted" }, ` — free: ${s.available_cpu} of ${s.cpu_cores} cores, ${fmt.gb(s.available_memory_gb)} of ${fmt.gb(s.memory_gb)} GB RAM, ${fmt.gb(s.available_disk_gb)} of ${fmt.gb(s.disk_gb)} GB disk`)),
    ),
  );
  const domain = h("input", { type: "text", name: "target_domain", value: m.target_domain ?? "", placeholder: "erp.example.com", autocomplete: "off" });
  const production = h("input", { type: "checkbox", name: "production", checked: m.production === true });
  const submit = h("button", { type: "submit" }, m.status === "ready" ? "Save server and domain" : "Use this server");
  const form = h(
    "form",
    { class: "server-form" },
    h("fieldset", {}, h("legend", {}, "Servers with room"), radios),
    field("Domain", domain, "Optional: the address the ERP is served at"),
    h("div", { class: "field" }, h("label", { class: "check" }, production, " Serve it as production"), h("span", { class: "hint" }, "Off (advised for a trial): the copy's outgoing mail servers and scheduled actions are turned off, so it e-mails no real customer.")),
    submit,
  );
  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const chosen = form.querySelector('input[name="target_vm_id"]:checked');
      if (!chosen) throw new Error("Choose a server first.");
      const body = { target_vm_id: chosen.value, production: production.checked };
      if (domain.value.trim()) body.target_domain = domain.value.trim();
      await ok(client.POST("/migrations/{migration_id}/configure", { params: { path: { migration_id: m.id } }, body }));
      ctx.announce("Target server saved; the migration is ready to start.");
      after();
    }),
  );
  section.append(form);
  return section;
}

export async function migrationPage(main, ctx, id) {
  let m = await ok(client.GET("/migrations/{migration_id}", { params: { path: { migration_id: id } } }));
  if (!ctx.current()) return;
  const canUpdate = ctx.can("org.migrations.update");
  const statusEl = h("span", { id: "migration-status" });
  const factsEl = h("dl", { class: "facts" });
  const errorEl = h("p", { class: "error-text", hidden: true });
  const actions = h("div", { class: "actions migration-actions" });
  const upload = canUpdate ? uploadSection(ctx, m, () => void reload()) : null;
  const steps = h("div", {});
  const report = h("div", {});
  const server = h("div", {});
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/migrations" }, "Migrations")),
    h("h1", {}, `Migration of ${m.project_name}`),
    h("p", { class: "facts-line" }, "Status: ", statusEl),
    factsEl,
    errorEl,
    actions,
    upload,
    steps,
    report,
    server,
  );

  function button(text, cls, fn) {
    const b = h("button", { type: "button", class: cls }, text);
    b.addEventListener("click", onSubmit(b, ctx.showError, fn));
    return b;
  }

  function paintActions() {
    const list = [];
    if (m.status === "completed" && m.environment_url) {
      list.push(
        h(
          "a",
          { class: "button open-link", href: m.environment_url, target: "_blank", rel: "noopener noreferrer" },
          "Open",
          h("span", { class: "visually-hidden" }, ` ${m.project_name} at`),
          " ",
          h("span", { class: "host" }, m.environment_url.replace(/^https?:\/\//, "")),
        ),
      );
    }
    if (m.environment_id) list.push(h("a", { class: "environment-link", href: `#/environments/${m.environment_id}` }, "Environment page"));
    if (ctx.can("org.migrations.execute") && m.status === "ready") {
      list.push(
        button("Start migration", "start", async () => {
          const out = await ok(client.POST("/migrations/{migration_id}/start", { params: { path: { migration_id: id } }, body: {} }));
          ctx.announce(out.message);
          await reload();
        }),
      );
    }
    if (canUpdate && m.status === "failed") {
      list.push(
        button("Retry", "secondary", async () => {
          const out = await ok(client.POST("/migrations/{migration_id}/retry", { params: { path: { migration_id: id } }, body: {} }));
          ctx.announce(out.message);
          await reload();
        }),
      );
    }
    if (canUpdate && !FINISHED.has(m.status)) {
      list.push(
        button("Cancel migration", "secondary danger", async () => {
          if (!confirm(`Cancel the migration of ${m.project_name}?`)) return;
          await ok(client.POST("/migrations/{migration_id}/cancel", { params: { path: { migration_id: id } }, body: {} }));
          ctx.announce("Migration cancelled.");
          await reload();
        }),
      );
    }
    if (ctx.can("org.migrations.delete") && m.status !== "processing") {
      list.push(
        button("Delete", "secondary danger", async () => {
          if (!confirm(`Delete the migration of ${m.project_name} and its stored backup?`)) return;
          await ok(client.DELETE("/migrations/{migration_id}", { params: { path: { migration_id: id } } }));
          ctx.announce("Migration deleted.");
          ctx.navigate("#/migrations");
        }),
      );
    }
    clear(actions).append(...list);
  }

  function paint() {
    clear(statusEl).append(statusBadge(m.status));
    // Where it is before the run (upload, import, analysis), or where it stopped.
    if (m.current_step && !["processing", "completed", "analyzed", "ready"].includes(m.status)) statusEl.append(h("span", { class: "muted" }, ` — ${stepLabel(m.current_step)}`));
    const receiving = m.status === "uploading" || m.status === "importing";
    clear(factsEl).append(
      ...[
        ["Coming from", SOURCE_LABEL[m.source_type] ?? m.source_type],
        ["Backup file", m.file_name ? `${m.file_name}${m.file_size_bytes ? ` (${fmt.bytes(m.file_size_bytes)})` : ""}` : "none yet"],
        receiving ? ["Received", h("span", { id: "migration-received" }, receivedText(m.bytes_received, m.file_size_bytes))] : null,
        m.sha256 ? ["SHA-256", h("code", { class: "sha256" }, m.sha256)] : null,
        m.git_repo_url ? ["Git repository", `${m.git_repo_url}${m.git_branch ? ` (${m.git_branch})` : ""}`] : null,
        m.target_domain ? ["Domain", m.target_domain] : null,
        ["Created", fmt.time(m.created_at)],
      ]
        .filter(Boolean)
        .flatMap(([dt, dd]) => [h("dt", {}, dt), h("dd", {}, dd)]),
    );
    errorEl.hidden = !m.error_message;
    errorEl.textContent = m.error_message ? `Error: ${m.error_message}` : "";
    // Shown until a backup arrived (then verified and analysed), and while this page sends one.
    const waiting = m.status === "pending" || (m.status === "uploading" && m.current_step === "uploading") || (m.status === "failed" && !m.sha256);
    if (upload) upload.hidden = !(waiting || upload.dataset.busy === "true");
    const running = m.status === "processing" || (Array.isArray(m.steps) && m.steps.some((s) => s.status !== "pending"));
    clear(steps).append(running ? stepsSection(m) : "");
    paintActions();
  }

  /**
   * The analysis and the server choice change only with the status: loaded again then (not on
   * every event, which would also reset a server being chosen). Only the latest load paints.
   */
  let shownFor = null;
  let stage = 0;
  async function paintStage() {
    if (shownFor === m.status) return;
    shownFor = m.status;
    const mine = ++stage;
    try {
      const [a, servers] = await Promise.all([
        // A failed migration may or may not have got as far as an analysis (409 when not).
        ANALYSED.has(m.status) || (m.status === "failed" && m.erp_version_detected) ? ok(client.GET("/migrations/{migration_id}/analysis", { params: { path: { migration_id: id } } })).catch((err) => (err.status === 409 ? null : Promise.reject(err))) : null,
        canUpdate && CONFIGURABLE.has(m.status) ? serverSection(ctx, m, () => void reload()) : null,
      ]);
      if (!ctx.current() || mine !== stage) return;
      clear(report).append(a ? analysisReport(a) : "");
      clear(server).append(servers ?? "");
    } catch (err) {
      // Loaded again at the next event or reload.
      if (mine === stage) shownFor = null;
      throw err;
    }
  }

  async function reload() {
    try {
      m = await ok(client.GET("/migrations/{migration_id}", { params: { path: { migration_id: id } } }));
      if (!ctx.current()) return;
      paint();
      await paintStage();
    } catch (err) {
      if (ctx.current()) ctx.showError(err);
    }
  }

  let timer = 0;
  ctx.on("migration_progress", (e) => {
    if (e.migration_id !== id) return;
    // Bytes of an upload or import are painted at once; the record follows.
    const received = document.getElementById("migration-received");
    if (received && e.bytes_received !== undefined) received.textContent = receivedText(e.bytes_received, e.bytes_total);
    if (!timer) timer = setTimeout(() => ((timer = 0), void reload()), 250);
    if (e.status !== m.status && (e.status === "completed" || e.status === "failed")) ctx.announce(`Migration ${STATUS_LABEL[e.status]}.`);
  });
  ctx.onCleanup(() => clearTimeout(timer));
  paint();
  await paintStage();
}
