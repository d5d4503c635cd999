// The page an invitation link opens (#/invite/<token>), signed in or not. The token stays in
// the URL's fragment, which browsers never send to a server, and goes to the API in request
// bodies only. Signed in as the invited address: accept. Not signed in: register an account
// for that address with the token, or sign in first when one exists.
import { ApiError, client, ok, session } from "./api.js";
import { clear, field, h, onSubmit } from "./dom.js";

/**
 * Renders the page into `main`. `signedIn` is the person or null; `done` is called once the
 * person is a member (the shell reloads who they are and opens the organisation).
 */
export async function invitePage(main, token, { signedIn, showError, announce, done, signIn }) {
  clear(main);
  let invitation;
  try {
    invitation = await ok(client.POST("/invitations/lookup", { body: { token } }));
  } catch (err) {
    const gone = err instanceof ApiError && err.status === 404;
    main.append(
      h("div", { class: "card narrow" }, h("h1", {}, "Invitation"), h("p", {}, gone ? err.message : "This invitation could not be read; try the link again.")),
    );
    return;
  }
  const card = h("div", { class: "card narrow" });
  card.append(h("h1", {}, `Join ${invitation.organization.name}`), h("p", {}, `You are invited as ${invitation.role}, as ${invitation.email}.`));
  main.append(card);

  if (signedIn) {
    if (signedIn.email.toLowerCase() !== invitation.email.toLowerCase()) {
      card.append(h("p", {}, `You are signed in as ${signedIn.email}. This invitation is for ${invitation.email}: sign out, then open the link again.`));
      return;
    }
    const accept = h("button", { type: "button" }, "Accept invitation");
    accept.addEventListener("click", async () => {
      accept.disabled = true;
      try {
        const out = await ok(client.POST("/invitations/accept", { body: { token } }));
        announce(`You joined ${out.organization_name}.`);
        await done(out.organization_id);
      } catch (err) {
        showError(err);
        accept.disabled = false;
      }
    });
    card.append(h("div", { class: "actions" }, accept));
    return;
  }

  if (invitation.account_exists) {
    card.append(h("p", {}, `An account with ${invitation.email} exists: sign in with it, then accept.`));
    const button = h("button", { type: "button" }, "Sign in to accept");
    button.addEventListener("click", () => signIn());
    card.append(h("div", { class: "actions" }, button));
    return;
  }

  const name = h("input", { type: "text", name: "name", autocomplete: "name", required: true, maxlength: 200 });
  const password = h("input", { type: "password", name: "password", autocomplete: "new-password", required: true, minlength: 10 });
  const submit = h("button", { type: "submit" }, "Create account and join");
  card.append(
    h(
      "form",
      {
        onsubmit: onSubmit(submit, showError, async () => {
          const out = await ok(client.POST("/auth/register", { body: { email: invitation.email, name: name.value, password: password.value, invitation_token: token } }));
          session.set(out.token);
          announce(`You joined ${out.organization.name}.`);
          await done(out.organization.id);
        }),
      },
      field("Your name", name),
      field("Choose a password", password, "At least 10 characters"),
      h("div", { class: "actions" }, submit),
    ),
  );
  name.focus();
}
