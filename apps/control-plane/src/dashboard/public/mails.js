// An environment's caught mail on its page (staging and development: production's mail is
// not caught): the newest messages, and one opened below the list with its recipients,
// attachments' names, text part and HTML. The HTML is the ERP's, whatever it holds: it is
// shown in an <iframe sandbox> with srcdoc and no allow-* token, so it runs no script, has
// no same origin (no session token, no cookies), and cannot navigate the dashboard.
import { client, ok } from "./api.js";
import { clear, fmt, h, onAction, table } from "./dom.js";

export function mailsSection(ctx, env) {
  const list = h("div", { class: "mails-list" });
  const view = h("div", { class: "mail-view", "aria-live": "polite" });
  const older = h("button", { type: "button", class: "secondary", hidden: true }, "Older mail");
  const path = { env_id: env.id };
  let cursor = null;
  const rows = [];

  async function load(more = false) {
    const page = await ok(client.GET("/environments/{env_id}/mails", { params: { path, query: { limit: 20, ...(more && cursor ? { cursor } : {}) } } }));
    if (!ctx.current()) return;
    if (!more) rows.length = 0;
    rows.push(...page.data);
    cursor = page.pagination.next_cursor;
    older.hidden = !page.pagination.has_more;
    clear(list);
    if (rows.length === 0) {
      list.append(h("p", {}, "No mail caught in the last 7 days."));
      return;
    }
    list.append(
      table(
        `Caught mail, newest first (${page.pagination.total} kept)`,
        ["Subject", "From", "To", "Received", "Size", "Attachments"],
        rows.map((m) => {
          const open = h("button", { type: "button", class: "link" }, m.subject || "(no subject)");
          open.addEventListener("click", onAction(open, ctx.showError, () => show(m.id)));
          return h(
            "tr",
            {},
            h("th", { scope: "row" }, open),
            h("td", {}, m.from),
            h("td", {}, m.to.join(", ")),
            h("td", {}, fmt.time(m.received_at)),
            h("td", {}, fmt.bytes(m.size)),
            h("td", {}, m.attachments.length ? m.attachments.join(", ") : "–"),
          );
        }),
      ),
    );
  }

  async function show(id) {
    const m = await ok(client.GET("/environments/{env_id}/mails/{mail_id}", { params: { path: { ...path, mail_id: id } } }));
    if (!ctx.current()) return;
    clear(view).append(
      h("h3", {}, m.subject || "(no subject)"),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "From"),
        h("dd", {}, m.from),
        h("dt", {}, "To"),
        h("dd", {}, m.to.join(", ")),
        h("dt", {}, "Received"),
        h("dd", {}, fmt.time(m.received_at)),
        h("dt", {}, "Attachments"),
        h("dd", {}, m.attachments.length ? m.attachments.map((a) => `${a.filename ?? "(unnamed)"} (${a.content_type}, ${fmt.bytes(a.size)})`).join(", ") : "none"),
      ),
      m.truncated ? h("p", { class: "hint" }, "This message was cut: its parts were longer than Berth keeps.") : null,
      // sandbox="" (no allow-scripts, no allow-same-origin): the mail's own code never runs here.
      m.html !== null ? h("iframe", { class: "mail-frame", sandbox: "", srcdoc: m.html, title: `The HTML of "${m.subject}"`, referrerpolicy: "no-referrer" }) : null,
      m.text !== null ? h("details", { open: m.html === null }, h("summary", {}, "Text part"), h("pre", { class: "mail-text" }, m.text)) : null,
    );
    view.scrollIntoView?.({ block: "nearest" });
  }

  older.addEventListener("click", onAction(older, ctx.showError, () => load(true)));
  const section = h(
    "section",
    { class: "mails", "aria-labelledby": "mails-title" },
    h("h2", { id: "mails-title" }, "Mails"),
    h("p", { class: "hint" }, "What this environment's ERP sent: caught on its server and delivered to nobody. Kept 7 days, at most 1,000 messages."),
    list,
    older,
    view,
  );
  void load().catch(ctx.showError);
  return section;
}
