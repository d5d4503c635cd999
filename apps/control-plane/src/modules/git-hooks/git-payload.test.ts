// Repository URL forms, push payloads of the three hosts, and hook verification.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { normalizeRepoUrl, parsePush, repoMatches, verifyHook } from "./git-payload.ts";

describe("normalizeRepoUrl", () => {
  it.each([
    ["https://github.com/Acme/ERP.git", "github.com/acme/erp"],
    ["https://github.com/acme/erp/", "github.com/acme/erp"],
    ["http://user:token@git.example.com/acme/erp", "git.example.com/acme/erp"],
    ["git@github.com:acme/erp.git", "github.com/acme/erp"],
    ["ssh://git@github.com:22/acme/erp.git", "github.com/acme/erp"],
    ["gitlab.example.com/group/sub/project", "gitlab.example.com/group/sub/project"],
    ["file:///srv/git/erp.git", "file:/srv/git/erp"],
  ])("%s -> %s", (input, expected) => {
    expect(normalizeRepoUrl(input)).toBe(expected);
  });

  it.each(["", "   ", "https://github.com/", "not a url at all", "https://github.com/acme/%E0%A4%A", "https://github.com/acme/%1\\"])("%j is no repository", (input) => {
    expect(normalizeRepoUrl(input)).toBeNull();
  });
});

describe("parsePush", () => {
  it("reads a GitHub push: branch, head commit and its message, repository URLs", () => {
    const push = parsePush("github", {
      ref: "refs/heads/release/17.0",
      after: "a".repeat(40),
      repository: { full_name: "Acme/ERP", clone_url: "https://github.com/Acme/ERP.git", ssh_url: "git@github.com:Acme/ERP.git" },
      head_commit: { id: "a".repeat(40), message: "Ship it\n" },
      commits: [],
    });
    expect(push).toEqual({
      repoUrls: ["github.com/acme/erp"],
      fullName: "acme/erp",
      branch: "release/17.0",
      commit: "a".repeat(40),
      message: "Ship it",
      deleted: false,
    });
  });

  it("reads a GitLab push: checkout_sha and the message of that commit", () => {
    const push = parsePush("gitlab", {
      ref: "refs/heads/main",
      after: "b".repeat(40),
      checkout_sha: "b".repeat(40),
      project: { path_with_namespace: "group/erp", git_http_url: "https://gitlab.com/group/erp.git" },
      commits: [
        { id: "c".repeat(40), message: "older" },
        { id: "b".repeat(40), message: "newest" },
      ],
    });
    expect(push).toMatchObject({ repoUrls: ["gitlab.com/group/erp"], fullName: "group/erp", branch: "main", commit: "b".repeat(40), message: "newest" });
  });

  it("a tag is not a branch; a deleted branch is marked deleted", () => {
    expect(parsePush("gitea", { ref: "refs/tags/v1", after: "d".repeat(40) }).branch).toBeNull();
    expect(parsePush("github", { ref: "refs/heads/x", after: "0".repeat(40), deleted: true }).deleted).toBe(true);
  });

  it("matches a project's URL in any form against the payload's URLs", () => {
    const push = parsePush("github", { repository: { full_name: "acme/erp", clone_url: "https://github.com/acme/erp.git" } });
    expect(repoMatches("git@github.com:Acme/erp", push)).toBe(true);
    expect(repoMatches("https://github.com/acme/erp-other.git", push)).toBe(false);
    expect(repoMatches("https://gitlab.com/acme/erp.git", push)).toBe(false);
    expect(repoMatches(null, push)).toBe(false);
  });
});

describe("verifyHook", () => {
  const secret = "bgh_secret";
  const body = Buffer.from('{"ref":"refs/heads/main"}');
  const hex = createHmac("sha256", secret).update(body).digest("hex");

  it("GitHub needs sha256=<hex> of the exact body", () => {
    expect(verifyHook("github", { "x-hub-signature-256": `sha256=${hex}` }, body, secret)).toBe(true);
    expect(verifyHook("github", { "x-hub-signature-256": hex }, body, secret)).toBe(false);
    expect(verifyHook("github", { "x-hub-signature-256": `sha256=${hex}` }, Buffer.from(`${body.toString()} `), secret)).toBe(false);
    expect(verifyHook("github", { "x-hub-signature-256": `sha256=${hex}` }, body, "other")).toBe(false);
    expect(verifyHook("github", {}, body, secret)).toBe(false);
  });

  it("Gitea takes the bare hex or sha256=<hex>", () => {
    expect(verifyHook("gitea", { "x-gitea-signature": hex }, body, secret)).toBe(true);
    expect(verifyHook("gitea", { "x-gitea-signature": `sha256=${hex}` }, body, secret)).toBe(true);
    expect(verifyHook("gitea", { "x-gitea-signature": "zz" }, body, secret)).toBe(false);
  });

  it("GitLab takes its token equal to the secret, or an HMAC signature", () => {
    expect(verifyHook("gitlab", { "x-gitlab-token": secret }, body, secret)).toBe(true);
    expect(verifyHook("gitlab", { "x-gitlab-token": `${secret}x` }, body, secret)).toBe(false);
    expect(verifyHook("gitlab", { "x-gitlab-signature": `sha256=${hex}` }, body, secret)).toBe(true);
    // A present but wrong signature is not rescued by a right token.
    expect(verifyHook("gitlab", { "x-gitlab-signature": `sha256=${"0".repeat(64)}`, "x-gitlab-token": secret }, body, secret)).toBe(false);
  });
});
