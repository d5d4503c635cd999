// CI and a developer's `source .ci/node.sh` run the tests on the Node the agent executable
// ships on: .ci/node.sh's default version and build-agent.ts's NODE_LTS_VERSION move together.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { NODE_LTS_VERSION, REPO_ROOT } from "../../installers/build/build-agent.ts";

describe(".ci/node.sh", () => {
  it("fetches the Node the agent executable ships on", () => {
    const script = readFileSync(path.join(REPO_ROOT, ".ci/node.sh"), "utf8");
    const version = /^BERTH_NODE_VERSION=\$\{BERTH_NODE_VERSION:-([0-9.]+)\}$/m.exec(script)?.[1];
    expect(version).toBe(NODE_LTS_VERSION);
  });
});
