import { describe, expect, it } from "vitest";
import { checkAccess, checkBranch, checkGitUrl, checkSubPaths, nameFromUrl } from "./addon-repositories-fns.ts";

const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe("add-on repository rules", () => {
  it("tells https from ssh URLs and refuses local, exotic and credential-carrying ones", () => {
    expect(checkGitUrl("https://github.com/OCA/web.git")).toBe("https");
    expect(checkGitUrl("https://git.example.com:8443/group/sub/repo")).toBe("https");
    expect(checkGitUrl("git@github.com:OCA/web.git")).toBe("ssh");
    expect(checkGitUrl("ssh://git@git.example.com:2222/acme/addons.git")).toBe("ssh");
    expect(checkGitUrl("ssh://git.example.com/acme/addons.git")).toBe("ssh");
    for (const bad of ["http://github.com/a/b.git", "file:///srv/repo", "/srv/repo", "ext::sh -c id", "git://github.com/a/b", "https://github.com", "git@-oProxyCommand=x:a/b", "https://tok@github.com/a/b.git", "ssh://git@host/a b"]) {
      expect(codeOf(() => checkGitUrl(bad)), bad).toBe("addon_url_invalid");
    }
  });

  it("checks branch names as Git does, roughly", () => {
    for (const ok of ["main", "17.0", "feature/x-y", "release-1.2"]) expect(codeOf(() => checkBranch(ok)), ok).toBeNull();
    for (const bad of ["", "-x", "a..b", "a b", "a~1", "x.lock", "/x", "x/", "a\u0001b", "a//b"]) expect(codeOf(() => checkBranch(bad)), bad).toBe("addon_branch_invalid");
  });

  it("keeps sub-paths inside the repository, without duplicates or trailing slashes", () => {
    expect(checkSubPaths(["addons/", "addons", "oca/web"])).toEqual(["addons", "oca/web"]);
    for (const bad of ["../x", "a/../b", "/abs", ".", "a/./b", "-x", "a b"]) expect(codeOf(() => checkSubPaths([bad])), bad).toBe("addon_path_invalid");
  });

  it("names a repository after its URL, and pairs deploy keys with ssh, tokens with https", () => {
    expect(nameFromUrl("git@github.com:OCA/web.git")).toBe("web");
    expect(nameFromUrl("https://gitlab.com/acme/my_module/")).toBe("my_module");
    expect(codeOf(() => checkAccess("deploy_key", "https", undefined))).toBe("addon_access_mismatch");
    expect(codeOf(() => checkAccess("token", "ssh", "t"))).toBe("addon_access_mismatch");
    expect(codeOf(() => checkAccess("public", "https", "t"))).toBe("addon_access_mismatch");
    expect(codeOf(() => checkAccess("token", "https", "t"))).toBeNull();
  });
});
