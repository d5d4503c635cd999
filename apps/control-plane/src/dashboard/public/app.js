// The dashboard shell: sign-in, the organisation switcher, navigation, hash routes, one
// live event stream per organisation, and errors shown in words in an aria-live region.
import { ApiError, client, eventStream, ok, session, whenSignedOut } from "./api.js";
import { clear, field, h, onSubmit } from "./dom.js";
import { prefetchServers, serversPage } from "./servers.js";
import { addServerPage } from "./add-server.js";
import { projectsPage } from "./projects.js";
import { environmentPage } from "./environment-page.js";
import { deploymentPage } from "./deployment-page.js";
import { settingsPage } from "./settings.js";
import { membersPage } from "./members.js";
import { invitePage } from "./invite.js";
import { migrationPage, migrationsPage } from "./migrations.js";
import { auditPage, supportAuditPage, supportPage, supportServerPage } from "./support.js";

const main = document.getElementById("main");
const alerts = document.getElementById("alerts");
const announcer = document.getElementById("announce");
const orgSwitch = document.getElementById("org-switch");
const liveState = document.getElementById("live-state");

const state = { me: null, orgId: null, stream: null, listeners: new Map(), pageCleanup: [], renderId: 0 };

const ROUTES = [
  [/^#\/servers\/new$/, addServerPage],
  [/^#\/servers$/, serversPage],
  [/^#\/projects$/, projectsPage],
  [/^#\/environments\/([0-9a-f-]{36})$/, environmentPage],
  [/^#\/deployments\/([0-9a-f-]{36})$/, deploymentPage],
  [/^#\/migrations$/, migrationsPage],
  [/^#\/migrations\/([0-9a-f-]{36})$/, migrationPage],
  [/^#\/settings$/, settingsPage],
  [/^#\/members$/, membersPage],
  [/^#\/audit$/, auditPage],
  [/^#\/support$/, supportPage],
  [/^#\/support\/audit$/, supportAuditPage],
  [/^#\/support\/servers\/([0-9a-f-]{36})$/, supportServerPage],
];

// ---- messages ---------------------------------------------------------------------------

export function showError(err) {
  const message = err instanceof ApiError || err instanceof Error ? err.message : String(err);
  clear(alerts).append(h("div", { class: "alert" }, h("span", {}, message), h("button", { type: "button", class: "link", onclick: () => clear(alerts) }, "Dismiss")));
}

export function announce(message) {
  announcer.textContent = message;
}

// ---- live events ------------------------------------------------------------------------

const EVENT_TYPES = ["server.stats", "server.status", "deployment.log", "deployment.status", "environment.status", "environment.routing", "server.proxy", "migration_progress", "reset"];

/** Wait before reconnecting a stream that ended (the server's retry: is the same). */
const RECONNECT_MS = 2000;

/**
 * Opens the organisation's live stream. Each open uses a fresh single-use ticket, so when the
 * stream fails this closes it and reconnects itself (EventSource would reuse the spent ticket),
 * resuming after the last event seen.
 */
function openStream(orgId) {
  state.stream?.close();
  state.stream = null;
  liveState.hidden = !orgId;
  if (!orgId) return;
  let es = null;
  let closed = false;
  let lastEventId = null;
  let timer = null;
  state.stream = {
    close() {
      closed = true;
      clearTimeout(timer);
      es?.close();
    },
  };
  const retry = () => {
    es?.close();
    es = null;
    if (closed) return;
    liveState.textContent = "Reconnecting…";
    timer = setTimeout(connect, RECONNECT_MS);
  };
  async function connect() {
    if (closed) return;
    if (!es) liveState.textContent = lastEventId ? "Reconnecting…" : "Connecting…";
    try {
      es = await eventStream(orgId, lastEventId);
    } catch (err) {
      // Not a member any more, or signed out (api.js signs the page out): nothing to resume.
      if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) {
        liveState.textContent = "Live updates stopped";
        return;
      }
      return retry();
    }
    if (closed) return void es.close();
    es.onopen = () => (liveState.textContent = "Live");
    es.onerror = () => retry();
    for (const type of EVENT_TYPES) {
      es.addEventListener(type, (ev) => {
        if (ev.lastEventId) lastEventId = ev.lastEventId;
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          return;
        }
        // The stream could not resume where it was: what the page shows may have missed events.
        if (type === "reset") return void route();
        for (const fn of state.listeners.get(type) ?? []) fn(data);
      });
    }
  }
  void connect();
}

/** Listens to a live event type while the current page is shown. */
function on(type, fn) {
  let set = state.listeners.get(type);
  if (!set) state.listeners.set(type, (set = new Set()));
  set.add(fn);
  state.pageCleanup.push(() => set.delete(fn));
}

// ---- context handed to pages ------------------------------------------------------------

function orgOf(id) {
  return state.me?.organizations.find((o) => o.id === id) ?? null;
}

function context() {
  const org = orgOf(state.orgId);
  const renderId = state.renderId;
  return {
    me: state.me,
    org,
    /** The caller's permission codes in the current organisation. */
    can: (code) => !!org && org.permissions.includes(code),
    // Work that finishes after the user has moved on must not attach to the next page.
    on: (type, fn) => {
      if (renderId === state.renderId) on(type, fn);
    },
    onCleanup: (fn) => {
      if (renderId === state.renderId) state.pageCleanup.push(fn);
      else fn();
    },
    /** False once the user has moved to another page (async work should stop touching the DOM). */
    current: () => renderId === state.renderId,
    showError,
    /** Takes a shown error away (a form that went through after a refusal). */
    clearError: () => clear(alerts),
    announce,
    navigate: (hash) => {
      if (location.hash === hash) route();
      else location.hash = hash;
    },
    refresh: () => route(),
  };
}

// ---- shell ------------------------------------------------------------------------------

function renderNav() {
  const nav = clear(document.getElementById("nav"));
  const org = orgOf(state.orgId);
  const can = (code) => !!org && org.permissions.includes(code);
  const links = [];
  if (org) links.push(["#/servers", "Servers"], ["#/projects", "Projects"], ["#/members", "Members"]);
  if (can("org.migrations.list")) links.push(["#/migrations", "Migrations"]);
  if (can("org.api_keys.manage") || can("org.webhooks.manage")) links.push(["#/settings", "API keys & webhooks"]);
  if (can("org.audit.read")) links.push(["#/audit", "Audit log"]);
  if (state.me?.user.is_portal_admin) links.push(["#/support", "Support console"]);
  const current = location.hash.split("/").slice(0, 2).join("/");
  nav.append(h("ul", {}, links.map(([href, label]) => h("li", {}, h("a", { href, "aria-current": current === href ? "page" : undefined }, label)))));
}

function renderOrgSwitch() {
  const orgs = state.me?.organizations ?? [];
  clear(orgSwitch).append(...orgs.map((o) => h("option", { value: o.id, selected: o.id === state.orgId }, o.name)));
  document.getElementById("org-switch-wrap").hidden = orgs.length === 0;
}

function defaultRoute() {
  if (state.orgId) return "#/servers";
  return state.me?.user.is_portal_admin ? "#/support" : "#/projects";
}

/** The token of an invitation link (#/invite/<token>), which opens its page signed in or not. */
const inviteToken = () => /^#\/invite\/(bin_[A-Za-z0-9_-]+)$/.exec(location.hash)?.[1] ?? null;

async function route() {
  for (const fn of state.pageCleanup.splice(0)) fn();
  state.renderId++;
  const token = inviteToken();
  if (token) return renderInvite(token);
  if (!session.token || !state.me) return renderSignIn();
  const hash = location.hash || defaultRoute();
  if (!location.hash) history.replaceState(null, "", hash);
  renderNav();
  const match = ROUTES.map(([re, page]) => [hash.match(re), page]).find(([m]) => m);
  clear(main);
  clear(alerts);
  if (!match) {
    main.append(h("h1", { tabindex: "-1" }, "Page not found"), h("p", {}, h("a", { href: defaultRoute() }, "Go to the start page")));
    return;
  }
  const [m, page] = match;
  try {
    await page(main, context(), ...m.slice(1));
  } catch (err) {
    showError(err);
  }
  const heading = main.querySelector("h1");
  if (heading && document.activeElement?.closest?.("main") == null && document.activeElement?.tagName !== "SELECT") {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
}

async function renderInvite(token) {
  document.getElementById("topbar").hidden = !state.me;
  clear(alerts);
  await invitePage(main, token, {
    signedIn: state.me ? state.me.user : null,
    showError,
    announce,
    // A member now: who they are changed (a new organisation), so the shell starts over there.
    done: async (orgId) => {
      sessionStorage.setItem("berth.org", orgId);
      history.replaceState(null, "", "#/servers");
      await start();
    },
    // Signing in comes back here: the link stays in the address bar.
    signIn: () => renderSignIn(),
  });
}

function renderSignIn() {
  document.getElementById("topbar").hidden = true;
  state.stream?.close();
  const email = h("input", { type: "email", name: "email", autocomplete: "username", required: true });
  const password = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card narrow",
      onsubmit: onSubmit(submit, showError, async () => {
        const out = await ok(client.POST("/auth/login", { body: { email: email.value, password: password.value } }));
        session.set(out.token);
        await start();
      }),
    },
    h("h1", {}, "Sign in to Berth"),
    field("E-mail address", email),
    field("Password", password),
    h("div", { class: "actions" }, submit),
  );
  clear(main).append(form);
  email.focus();
}

async function start() {
  // Signed out, route() shows the sign-in page, or an invitation link's page.
  if (!session.token) return route();
  const saved = sessionStorage.getItem("berth.org");
  if (saved && (location.hash === "" || location.hash === "#/servers")) prefetchServers(saved);
  try {
    state.me = await ok(client.GET("/me"));
  } catch (err) {
    session.clear();
    state.me = null;
    if (!(err instanceof ApiError && err.status === 401)) showError(err);
    return route();
  }
  const orgs = state.me.organizations;
  state.orgId = orgs.find((o) => o.id === saved)?.id ?? orgs[0]?.id ?? null;
  document.getElementById("topbar").hidden = false;
  document.getElementById("whoami").textContent = state.me.user.name || state.me.user.email;
  renderOrgSwitch();
  openStream(state.orgId);
  await route();
}

orgSwitch.addEventListener("change", () => {
  state.orgId = orgSwitch.value;
  sessionStorage.setItem("berth.org", state.orgId);
  openStream(state.orgId);
  const section = location.hash.split("/")[1];
  const next = ["servers", "projects", "members", "migrations", "settings", "audit"].includes(section) ? `#/${section}` : "#/servers";
  if (location.hash === next) void route();
  else location.hash = next;
});

document.getElementById("sign-out").addEventListener("click", async () => {
  try {
    await ok(client.POST("/auth/logout", { body: {} }));
  } catch {
    // Signed out locally either way.
  }
  session.clear();
  state.me = null;
  location.hash = "";
  renderSignIn();
});

whenSignedOut(() => {
  session.clear();
  state.me = null;
  renderSignIn();
  showError("Your session has ended. Sign in again.");
});

window.addEventListener("hashchange", () => void route());
// Anything that slipped through is still told in words, never as a stack.
window.addEventListener("unhandledrejection", (ev) => showError(ev.reason instanceof Error ? ev.reason.message : "Something went wrong; reload the page."));
void start();
