// Adding a server: its name, then the one-line install command (shown once) and the agent's
// connection as it happens.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit } from "./dom.js";

export async function addServerPage(main, ctx) {
  const orgId = ctx.org?.id;
  main.append(h("h1", {}, "Add a server"));
  if (!orgId || !ctx.can("org.servers.manage")) {
    main.append(h("p", {}, "You don't have permission to manage servers in this organisation."));
    return;
  }
  const name = h("input", { type: "text", name: "name", required: true, maxlength: 100, autocomplete: "off" });
  const submit = h("button", { type: "submit" }, "Create server and install command");
  const result = h("section", { class: "install", "aria-label": "Install command" });
  const form = h(
    "form",
    {
      class: "card",
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const out = await ok(client.POST("/organizations/{organization_id}/servers", { params: { path: { organization_id: orgId } }, body: { name: name.value } }));
        showInstall(out);
      }),
    },
    h("p", {}, "Give the server a name; you get a one-line command that installs the agent and connects it to this organisation."),
    field("Server name", name, "e.g. web-1 or the host name"),
    h("div", { class: "actions" }, submit),
  );
  main.append(form, result);
  name.focus();

  function showInstall(out) {
    const code = h("code", { id: "install-command" }, out.install_command);
    const copy = h(
      "button",
      {
        type: "button",
        class: "secondary",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(out.install_command);
            ctx.announce("Install command copied.");
            copy.textContent = "Copied";
          } catch {
            const range = document.createRange();
            range.selectNodeContents(code);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
            ctx.announce("Install command selected; press Ctrl+C to copy it.");
          }
        },
      },
      "Copy command",
    );
    const status = h("p", { class: "agent-wait", role: "status", id: "agent-state" }, badge("pending", "Waiting"), " Waiting for the agent to connect…");
    clear(result).append(
      h("h2", {}, `Install the agent on ${out.server.name}`),
      h("p", {}, "On the server (Debian or Ubuntu with Docker), run as root:"),
      h("pre", { class: "command" }, code),
      h("div", { class: "actions" }, copy),
      h("p", { class: "hint" }, `The enrolment token in this command works once and expires ${fmt.time(out.enrollment.expires_at)}. It is not shown again.`),
      status,
    );
    form.hidden = true;
    copy.focus();
    ctx.on("server.status", (d) => {
      if (d.server_id !== out.server.id) return;
      if (d.status === "online") {
        clear(status).append(badge("online", "Online"), ` ${out.server.name} is connected. `, h("a", { href: "#/servers" }, "See it with the other servers"));
        ctx.announce(`${out.server.name} is online.`);
      } else if (d.status === "offline") {
        clear(status).append(badge("offline", "Enrolled"), " The agent has enrolled; waiting for its live link…");
      }
    });
  }
}
