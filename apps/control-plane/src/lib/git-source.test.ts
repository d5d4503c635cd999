// The one rule for Git URLs and branches (projects, migrations, add-on repositories).
import { describe, expect, it } from "vitest";
import { checkGitBranch, checkGitUrl, gitUrlKind } from "./git-source.ts";

const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe("a Git URL", () => {
  it("is https or ssh (ssh:// or scp-like)", () => {
    expect(gitUrlKind("https://github.com/a/b.git")).toBe("https");
    expect(gitUrlKind("https://u:t@github.com/a/b.git")).toBe("https");
    expect(gitUrlKind("https://[2001:db8::1]:8443/a/b")).toBe("https");
    expect(gitUrlKind("git@github.com:a/b.git")).toBe("ssh");
    expect(gitUrlKind("git@github.com:/srv/b.git")).toBe("ssh");
    expect(gitUrlKind("ssh://git@h.example:22/a/b")).toBe("ssh");
  });
  it.each([
    "http://github.com/a/b", "file:///etc/passwd", "FILE:///srv/x", "/srv/x", "./x", "../x", "ext::sh -c id", "git://h.example/a", "fd::3",
    "-u@h.example:a", "git@-h.example:a", "ssh://-oProxyCommand=x/a", "ssh://git@-h/a", "https://-h/a", "https://github.com", "git@h.example:-x",
    "--upload-pack=touch /tmp/x", "https://h.example/a\nb", "git@h.example://x", "", "https://h.example/a b",
  ])("refuses %j", (url) => {
    expect(gitUrlKind(url)).toBeNull();
    expect(codeOf(() => checkGitUrl(url, { field: "git_repo_url", credentials: "allow" }))).toBe("git_url_invalid");
  });
  it("refuses credentials where the surface takes them apart", () => {
    expect(codeOf(() => checkGitUrl("https://t@h.example/a", { field: "git_url", credentials: "refuse" }))).toBe("git_url_invalid");
    expect(checkGitUrl("https://t@h.example/a", { field: "git_url", credentials: "allow" })).toBe("https");
  });
});

describe("a branch", () => {
  it.each(["main", "17.0", "feature/x-y", "release-1.2", "a@b", "ü-branch"])("takes %j", (b) => {
    expect(codeOf(() => checkGitBranch(b, { field: "git_branch" }))).toBeNull();
  });
  it.each(["", "-x", "--upload-pack=x", "a..b", "a b", "a~1", "a^", "a:b", "x.lock", "x.lock/y", "/x", "x/", "a\u0001b", "a//b", "@", "a/.b", ".x", "x.", "a@{b", "a[b", "a\\b", "a?", "a*"])(
    "refuses %j (git check-ref-format, no leading -)",
    (b) => {
      expect(codeOf(() => checkGitBranch(b, { field: "git_branch" }))).toBe("git_branch_invalid");
    },
  );
});
