// An environment's address as the dashboard shows it: the link that opens it, its certificate
// and what its domain's DNS resolves to.
import { badge, h } from "./dom.js";

const CERTIFICATE_LABEL = {
  none: "no certificate",
  valid: "certificate valid",
  pending: "certificate pending",
  not_requested: "certificate not requested",
  error: "certificate error",
};
const CERTIFICATE_BADGE = { none: "idle", valid: "success", pending: "pending", not_requested: "pending", error: "error" };

/** "Open" in a new tab when the environment has a URL, with the host it opens. */
export function openLink(env) {
  if (!env.url) return h("span", { class: "muted" }, "no address");
  return h(
    "a",
    { href: env.url, target: "_blank", rel: "noopener noreferrer", class: "open-link" },
    "Open",
    h("span", { class: "visually-hidden" }, ` ${env.name} at`),
    " ",
    h("span", { class: "host" }, env.url.replace(/^https:\/\//, "")),
  );
}

/** The certificate in words (never by colour alone), with its expiry or the CA's error. */
export function certificateBadge(env) {
  const c = env.certificate;
  const detail = c.status === "valid" && c.not_after ? ` until ${new Date(c.not_after).toLocaleDateString()}` : c.status === "error" && c.error ? `: ${c.error}` : "";
  return h("span", { class: "certificate", dataset: { certificate: c.status } }, badge(CERTIFICATE_BADGE[c.status] ?? "idle", CERTIFICATE_LABEL[c.status] ?? c.status), detail);
}

/** The DNS check of the environment's domain, in words. */
export function dnsText(dns) {
  if (dns.status === "ok") return `resolves to this server (${dns.resolved.join(", ")})`;
  if (dns.status === "mismatch") return `points to ${dns.resolved.join(", ")}, not to ${dns.expected.join(", ")}`;
  if (dns.status === "unresolved") return `does not resolve; point it to ${dns.expected.join(", ") || "the server"}`;
  return "not checked yet";
}
