// An environment's backups: back up now, and for each backup in the control plane's store a
// Download button (a signed link, valid 15 minutes, to each of its files, with the SHA-256 to
// check the download against) and Delete. What the caller's role allows only.
import { client, ok } from "./api.js";
import { badge, clear, fmt, h, onSubmit, table } from "./dom.js";

const bytes = fmt.bytes;

const STORAGE_LABEL = { local: "control plane", s3: "object storage" };

/** The files of a download link: one link each, its size and SHA-256, and when the link expires. */
function downloadPanel(link, backup) {
  return h(
    "div",
    { class: "download-panel", role: "region", "aria-label": `Download backup of ${fmt.time(backup.created_at)}` },
    h("p", { class: "hint" }, `Links valid until ${fmt.clock(link.expires_at)}. Check each file against its SHA-256 (sha256sum).`),
    h(
      "ul",
      { class: "download-files" },
      link.files.map((f) =>
        h(
          "li",
          {},
          h("a", { href: f.url, download: f.name, class: "download-link" }, f.name),
          ` (${bytes(f.size_bytes)}) `,
          h("code", { class: "sha256", title: "SHA-256" }, f.sha256),
        ),
      ),
    ),
  );
}

export function backupsSection(ctx, project, env) {
  const can = (code) => project.permissions.includes(code);
  const list = h("div", {});
  const panel = h("div", {});
  const section = h("section", { class: "backups", "aria-labelledby": "backups-title" }, h("h2", { id: "backups-title" }, "Backups"));
  if (can("project.backups.create")) {
    const b = h("button", { type: "button", class: "secondary" }, "Back up now");
    b.addEventListener(
      "click",
      onSubmit(b, ctx.showError, async () => {
        await ok(client.POST("/environments/{env_id}/backups", { params: { path: { env_id: env.id } }, body: {} }));
        ctx.announce(`Backup of ${env.name} started.`);
        await load();
      }),
    );
    section.append(h("div", { class: "actions" }, b));
  }
  section.append(list, panel);

  function button(text, label, fn) {
    const b = h("button", { type: "button", class: "secondary" }, text, h("span", { class: "visually-hidden" }, ` ${label}`));
    b.addEventListener("click", onSubmit(b, ctx.showError, fn));
    return b;
  }

  async function load() {
    const page = await ok(client.GET("/environments/{env_id}/backups", { params: { path: { env_id: env.id }, query: { limit: 20 } } }));
    if (!ctx.current()) return;
    clear(list);
    if (page.data.length === 0) {
      list.append(h("p", {}, "No backups yet."));
      return;
    }
    list.append(
      table(
        "Backups, newest first",
        ["Created", "Type", "Status", "Size", "Kept in", "Actions"],
        page.data.map((b) => {
          const label = `backup of ${fmt.time(b.created_at)}`;
          const actions = [];
          if (can("project.backups.download") && b.status === "completed" && b.storage) {
            actions.push(
              button("Download", label, async () => {
                const link = await ok(client.POST("/environments/{env_id}/backups/{backup_id}/download", { params: { path: { env_id: env.id, backup_id: b.id } }, body: {} }));
                clear(panel).append(downloadPanel(link, b));
                panel.querySelector("a")?.focus();
              }),
            );
          }
          if (can("project.backups.delete") && b.status !== "pending" && b.backup_type !== "pre_deploy") {
            actions.push(
              button("Delete", label, async () => {
                if (!confirm(`Delete the ${label}? Its files are removed from the backup store.`)) return;
                await ok(client.DELETE("/environments/{env_id}/backups/{backup_id}", { params: { path: { env_id: env.id, backup_id: b.id } } }));
                ctx.announce(`The ${label} was deleted.`);
                clear(panel);
                await load();
              }),
            );
          }
          return h(
            "tr",
            { dataset: { backupId: b.id } },
            h("th", { scope: "row" }, fmt.time(b.created_at)),
            h("td", {}, b.backup_type, b.comment ? h("span", { class: "muted" }, ` – ${b.comment}`) : null),
            h("td", {}, badge(b.status), b.error_message ? h("span", { class: "muted" }, ` ${b.error_message}`) : null),
            h("td", {}, bytes(b.size_bytes)),
            h("td", {}, b.storage ? STORAGE_LABEL[b.storage] ?? b.storage : "server only"),
            h("td", {}, actions.length ? h("div", { class: "row-actions" }, actions) : h("span", { class: "muted" }, "–")),
          );
        }),
      ),
    );
  }

  return { section, load };
}
