import { describe, expect, it } from "vitest";
import { joinCredentials, splitCredentials, withoutCredentials } from "./git-credentials.ts";

describe("repository URL credentials", () => {
  it.each([
    ["https://user:tok@git.example.com/a/b.git", "https://git.example.com/a/b.git", "user:tok"],
    ["https://x-access-token:ghp_1@github.com:443/a/b", "https://github.com:443/a/b", "x-access-token:ghp_1"],
    ["https://tok@host/a?b=c@d", "https://host/a?b=c@d", "tok"],
    ["https://us%40er:p%40ss@host/a", "https://host/a", "us%40er:p%40ss"],
    ["https://a@b:c@host/r", "https://host/r", "a@b:c"],
    ["https://host/a@b", "https://host/a@b", null],
    ["https://git.example.com/a/b.git", "https://git.example.com/a/b.git", null],
    ["git@github.com:acme/erp.git", "git@github.com:acme/erp.git", null],
    ["file:///srv/repo", "file:///srv/repo", null],
  ])("%s is %s with %s", (url, bare, credentials) => {
    expect(splitCredentials(url)).toEqual({ url: bare, credentials });
    expect(withoutCredentials(url)).toBe(bare);
    expect(joinCredentials(bare, credentials)).toBe(url);
  });
});
