import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import type { CandidateRow } from "./git-hooks.repo.ts";
import { namePattern, pickCandidates, skipReason, targetsOf } from "./git-hooks.service.ts";
import { parsePush } from "./git-payload.ts";

const push = parsePush("github", { ref: "refs/heads/main", after: "a".repeat(40), repository: { full_name: "acme/erp", clone_url: "https://github.com/acme/erp.git" } });

describe("the LIKE pattern that narrows the candidates", () => {
  it("is the repository's last path segment, anywhere in the URL", () => {
    expect(namePattern(push)).toBe("%erp%");
  });
  it("escapes LIKE's wildcards and its escape character", () => {
    const odd = { repoUrls: ["github.com/acme/my_erp%1\\x"], fullName: "acme/my_erp%1\\x", branch: "main", commit: null, message: null, deleted: false };
    expect(namePattern(odd)).toBe("%my\\_erp\\%1\\\\x%");
  });
  it("is none when the push names no repository", () => {
    expect(namePattern(parsePush("github", { ref: "refs/heads/main" }))).toBeNull();
  });
});

describe("which projects a push is for", () => {
  const row = (id: string, url: string | null, enc: string | null = `sealed-${id}`): CandidateRow => ({ id, org: `org-${id}`, url, enc });
  const open = (sealed: string) => (sealed.startsWith("sealed-") ? `secret-${sealed.slice(7)}` : null);

  it("keeps projects whose repository really is the pushed one (the pattern only narrows)", () => {
    const out = pickCandidates([row("p1", "git@github.com:Acme/erp.git"), row("p2", "https://github.com/acme/erp-old.git")], [], push, open);
    expect(out).toEqual([{ projectId: "p1", organizationId: "org-p1", ownRepo: true, secret: "secret-p1" }]);
  });

  it("finds projects through an addon repository, and counts one found both ways as its own repository", () => {
    const out = pickCandidates([row("p1", "https://github.com/acme/erp")], [row("p1", "https://github.com/acme/erp"), row("p3", "https://github.com/acme/erp")], push, open);
    expect(out.map((c) => [c.projectId, c.ownRepo])).toEqual([
      ["p1", true],
      ["p3", false],
    ]);
  });

  it("leaves out a project without a secret, or whose secret does not open with this master key", () => {
    expect(pickCandidates([row("p1", "https://github.com/acme/erp", null), row("p2", "https://github.com/acme/erp", "other-key")], [], push, open)).toEqual([]);
  });
});

describe("the environments a push deploys", () => {
  it("takes the branch's environments, then environments with the pushed addon, each once", () => {
    const targets = targetsOf(
      [{ id: "e1" }, { id: "e2" }],
      [
        { environmentId: "e2", name: "payments" },
        { environmentId: "e3", name: "payments" },
      ],
    );
    expect([...targets]).toEqual([
      ["e1", { reason: "branch", addon: null }],
      ["e2", { reason: "branch", addon: null }],
      ["e3", { reason: "addon", addon: "payments" }],
    ]);
  });
});

describe("a deployment the push could not start", () => {
  it("is skipped when the environment is busy or gone", () => {
    expect(skipReason(new DomainError("task_in_progress", "busy"))).toBe("deployment_in_progress");
    expect(skipReason(new DomainError("deployment_in_progress", "busy"))).toBe("deployment_in_progress");
    expect(skipReason(new DomainError("not_found", "gone"))).toBe("not_found");
  });
  it("fails the push for anything else", () => {
    expect(skipReason(new DomainError("validation_error", "no"))).toBeNull();
    expect(skipReason(new Error("connection terminated"))).toBeNull();
  });
});
