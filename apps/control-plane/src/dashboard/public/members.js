// People of the organisation: members with their roles (changed under the owner rules:
// only owners make or change owners, the last owner stays), removal, signing a member out
// everywhere, invitations (send, resend, revoke), and the signed-in person's own sessions.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit, table } from "./dom.js";

const ROLES = ["member", "admin", "owner"];

export async function membersPage(main, ctx) {
  main.append(h("h1", {}, "Members"));
  if (!ctx.org) return;
  const orgId = ctx.org.id;
  const manage = ctx.can("org.members.manage");
  const members = h("div", {});
  const invitations = h("div", {});
  main.append(h("section", { class: "card", "aria-labelledby": "members-h" }, h("h2", { id: "members-h" }, "People"), members));
  if (manage) main.append(inviteSection(ctx, orgId, invitations));
  main.append(await sessionsSection(ctx));

  async function loadMembers() {
    const page = await ok(client.GET("/organizations/{organization_id}/members", { params: { path: { organization_id: orgId } } }));
    if (!ctx.current()) return;
    const rows = page.data.map((m) => memberRow(ctx, orgId, m, manage, loadMembers));
    clear(members).append(table("Members", ["Name", "E-mail", "Role", "Member since", ""], rows));
  }
  async function loadInvitations() {
    const page = await ok(client.GET("/organizations/{organization_id}/invitations", { params: { path: { organization_id: orgId } } }));
    if (!ctx.current()) return;
    clear(invitations).append(
      page.data.length === 0
        ? h("p", {}, "No open invitations.")
        : table(
            "Open invitations",
            ["E-mail", "Role", "State", "Sent", "Expires", ""],
            page.data.map((i) => invitationRow(ctx, orgId, i, loadInvitations)),
          ),
    );
  }
  invitations.reload = loadInvitations;
  await loadMembers();
  if (manage) await loadInvitations();
}

function memberRow(ctx, orgId, m, manage, reload) {
  const self = m.user_id === ctx.me.user.id;
  const ownersOnly = !ctx.can("org.owners.manage");
  const role = h(
    "select",
    { "aria-label": `Role of ${m.email}`, disabled: !manage || (ownersOnly && m.role === "owner") },
    ROLES.map((r) => h("option", { value: r, selected: r === m.role, disabled: ownersOnly && r === "owner" }, r)),
  );
  role.addEventListener("change", async () => {
    try {
      await ok(client.PUT("/organizations/{organization_id}/members", { params: { path: { organization_id: orgId } }, body: { email: m.email, role: role.value } }));
      ctx.announce(`${m.email} is now ${role.value}.`);
    } catch (err) {
      ctx.showError(err);
    }
    await reload();
  });
  const actions = [];
  // An owner's access is for owners to change: the server refuses the rest (owner_required).
  const mayAct = manage && !(ownersOnly && m.role === "owner");
  if (mayAct && !self) {
    actions.push(
      h(
        "button",
        {
          type: "button",
          class: "secondary",
          onclick: async () => {
            if (!confirm(`Sign ${m.email} out everywhere? Their sessions end and the API keys they created here are revoked.`)) return;
            try {
              const out = await ok(client.DELETE("/organizations/{organization_id}/members/{user_id}/sessions", { params: { path: { organization_id: orgId, user_id: m.user_id } } }));
              ctx.announce(`Signed ${m.email} out: ${out.sessions_revoked} sessions and ${out.api_keys_revoked} API keys revoked.`);
            } catch (err) {
              ctx.showError(err);
            }
          },
        },
        "Sign out everywhere",
      ),
    );
  }
  if (mayAct || self) {
    actions.push(
      h(
        "button",
        {
          type: "button",
          class: "secondary danger",
          onclick: async () => {
            const what = self ? "Leave this organisation?" : `Remove ${m.email} from the organisation? Their API keys here are revoked.`;
            if (!confirm(what)) return;
            try {
              await ok(client.DELETE("/organizations/{organization_id}/members/{user_id}", { params: { path: { organization_id: orgId, user_id: m.user_id } } }));
              ctx.announce(self ? "You left the organisation." : `${m.email} was removed.`);
              if (self) return void location.reload();
            } catch (err) {
              ctx.showError(err);
            }
            await reload();
          },
        },
        self ? "Leave" : "Remove",
      ),
    );
  }
  return h(
    "tr",
    { dataset: { email: m.email } },
    h("td", {}, m.name),
    h("td", {}, m.email),
    h("td", {}, role),
    h("td", {}, fmt.time(m.created_at)),
    h("td", {}, actions),
  );
}

function inviteSection(ctx, orgId, invitations) {
  const email = h("input", { type: "email", required: true, maxlength: 254, autocomplete: "off" });
  const role = h(
    "select",
    {},
    ROLES.filter((r) => r !== "owner" || ctx.can("org.owners.manage")).map((r) => h("option", { value: r }, r)),
  );
  const submit = h("button", { type: "submit" }, "Send invitation");
  return h(
    "section",
    { class: "card", "aria-labelledby": "invite-h" },
    h("h2", { id: "invite-h" }, "Invitations"),
    h("p", { class: "hint" }, "People join by an invitation mailed to them: the link works once, for a week, for that address only."),
    h(
      "form",
      {
        class: "inline-form",
        onsubmit: onSubmit(submit, ctx.showError, async () => {
          const inv = await ok(client.POST("/organizations/{organization_id}/invitations", { params: { path: { organization_id: orgId } }, body: { email: email.value, role: role.value } }));
          ctx.announce(`Invitation sent to ${inv.email}.`);
          email.value = "";
          await invitations.reload();
        }),
      },
      field("E-mail address", email),
      field("Role", role),
      submit,
    ),
    invitations,
  );
}

function invitationRow(ctx, orgId, i, reload) {
  const act = (label, cls, fn) =>
    h(
      "button",
      {
        type: "button",
        class: cls,
        onclick: async () => {
          try {
            await fn();
          } catch (err) {
            ctx.showError(err);
          }
          await reload();
        },
      },
      label,
    );
  return h(
    "tr",
    { dataset: { email: i.email } },
    h("td", {}, i.email),
    h("td", {}, i.role),
    h("td", {}, badge(i.status === "pending" ? "pending" : "failed", i.status)),
    h("td", {}, fmt.ago(i.sent_at)),
    h("td", {}, fmt.time(i.expires_at)),
    h(
      "td",
      {},
      act("Resend", "secondary", async () => {
        await ok(client.POST("/organizations/{organization_id}/invitations/{invitation_id}/resend", { params: { path: { organization_id: orgId, invitation_id: i.id } }, body: {} }));
        ctx.announce(`Invitation sent again to ${i.email}.`);
      }),
      act("Revoke", "secondary danger", async () => {
        if (!confirm(`Revoke the invitation to ${i.email}? Its link stops working.`)) throw new Error("Not revoked.");
        await ok(client.DELETE("/organizations/{organization_id}/invitations/{invitation_id}", { params: { path: { organization_id: orgId, invitation_id: i.id } } }));
        ctx.announce(`Invitation to ${i.email} revoked.`);
      }),
    ),
  );
}

/** The signed-in person's own sessions, each of which they may end. */
async function sessionsSection(ctx) {
  const list = h("div", {});
  async function load() {
    const page = await ok(client.GET("/auth/sessions"));
    if (!ctx.current()) return;
    clear(list).append(
      table(
        "Your sessions",
        ["Signed in", "Last used", "Browser", "Address", ""],
        page.data.map((s) =>
          h(
            "tr",
            {},
            h("td", {}, fmt.time(s.created_at)),
            h("td", {}, fmt.ago(s.last_used_at)),
            h("td", {}, s.user_agent ?? "–"),
            h("td", {}, s.ip ?? "–"),
            h(
              "td",
              {},
              s.current
                ? "This session"
                : h(
                    "button",
                    {
                      type: "button",
                      class: "secondary",
                      onclick: async () => {
                        try {
                          await ok(client.DELETE("/auth/sessions/{id}", { params: { path: { id: s.id } } }));
                          ctx.announce("Session signed out.");
                        } catch (err) {
                          ctx.showError(err);
                        }
                        await load();
                      },
                    },
                    "Sign out",
                  ),
            ),
          ),
        ),
      ),
    );
  }
  await load();
  return h("section", { class: "card", "aria-labelledby": "sessions-h" }, h("h2", { id: "sessions-h" }, "Your sessions"), list);
}
