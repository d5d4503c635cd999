// An environment's domains on its page: each name's verification status in words (pending,
// verified, released), and for a pending one the DNS records that prove it (the TXT record
// with its token, or the name pointed at the server or at the generated name) with "Check
// now" for those who may change the environment. A released name says why it left.
import { client, ok } from "./api.js";
import { badge, clear, fmt, h, onAction, table } from "./dom.js";

const STATUS_LABEL = { pending: "pending", verified: "verified", released: "released" };

/** The records that prove a pending name: the TXT one first, then the alternatives the API names. */
function proofRecords(d) {
  const rows = [["TXT", d.verification.name, d.verification.value]];
  if (d.alternatives.addresses.length) rows.push([`or A/AAAA`, d.name, d.alternatives.addresses.join(", ")]);
  if (d.alternatives.cname) rows.push(["or CNAME", d.name, d.alternatives.cname]);
  return table(
    `DNS records that prove ${d.name}: any one of them`,
    ["Record", "Name", "Value"],
    rows.map(([type, name, value]) => h("tr", {}, h("th", { scope: "row" }, type), h("td", {}, h("code", {}, name)), h("td", {}, h("code", { class: "record-value" }, value)))),
  );
}

/** What the status means for the customer, in a sentence. */
function statusText(d) {
  if (d.status === "verified") return `Verified ${fmt.time(d.verified_at)}: this name is this environment's alone.`;
  if (d.status === "released") return "Released: another organisation proved this name first, so it was taken out of this environment, which no longer serves it. Choose another name in the settings.";
  return `Not proven yet (${d.checked_at ? `last checked ${fmt.ago(d.checked_at)}` : "not checked yet"}): until it is, another organisation that proves the name first takes it. Publish one of these records; Berth checks every few minutes.`;
}

/** The sentence announced after "Check now". */
function checkResult(d) {
  if (d.status === "verified") return `${d.name} is verified: it is this environment's alone.`;
  if (d.status === "released") return `${d.name} was released: another organisation proved it first.`;
  return `${d.name} is still pending: no DNS record proves it yet. DNS changes can take a while to be seen; check again later.`;
}

export function domainsSection(ctx, project, env) {
  const canCheck = project.permissions.includes("project.environments.update");
  const list = h("div", { class: "domain-list" });

  function claimCard(d) {
    const card = h("article", { class: "domain-claim", dataset: { domain: d.name, status: d.status }, "aria-labelledby": `domain-${d.name}` });
    const result = h("p", { class: "check-result", role: "status" });
    function paint(claim) {
      card.dataset.status = claim.status;
      // DOM append writes null as "null": the parts a status has not are left out first.
      const parts = [
        h("h3", { id: `domain-${claim.name}`, tabindex: "-1" }, h("code", {}, claim.name), " ", badge(claim.status, STATUS_LABEL[claim.status] ?? claim.status)),
        h("p", { class: "domain-status-text" }, statusText(claim)),
        claim.status === "pending" ? proofRecords(claim) : null,
        claim.status === "pending" && canCheck ? checkButton(claim) : null,
        result,
      ];
      card.replaceChildren(...parts.filter((part) => part !== null));
    }
    function checkButton(claim) {
      const b = h("button", { type: "button", class: "secondary check-now" }, "Check now", h("span", { class: "visually-hidden" }, ` ${claim.name}`));
      b.addEventListener(
        "click",
        onAction(b, ctx.showError, async () => {
          const after = await ok(client.POST("/environments/{env_id}/domains/{domain}/verify", { params: { path: { env_id: env.id, domain: claim.name } }, body: {} }));
          if (!ctx.current()) return;
          paint(after);
          result.textContent = checkResult(after);
          ctx.announce(checkResult(after));
          (after.status === "pending" ? card.querySelector(".check-now") : card.querySelector("h3"))?.focus();
        }),
      );
      return b;
    }
    paint(d);
    return card;
  }

  async function load() {
    const out = await ok(client.GET("/environments/{env_id}/domains", { params: { path: { env_id: env.id } } }));
    if (!ctx.current()) return;
    clear(list).append(...(out.data.length ? out.data.map(claimCard) : [h("p", {}, "No domain of its own: the environment is served at its generated name, if the installation has one.")]));
  }
  load().catch((err) => ctx.showError(err));
  return h(
    "section",
    { class: "domains", "aria-labelledby": "domains-h" },
    h("h2", { id: "domains-h" }, "Domains"),
    h("p", { class: "hint" }, "A domain is held by this environment once it is proven through DNS; each one below says how it stands."),
    list,
  );
}
