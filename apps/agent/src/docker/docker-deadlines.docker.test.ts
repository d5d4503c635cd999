// A busy engine: while it creates or removes a container (with vfs, a whole image copy) it
// answers an image inspect late. A deploy must wait for that answer, while the sampler's
// readings still give up after their short deadline. The engine here is a socket that
// answers like Docker's API does, late on purpose: the real engine cannot be made busy on
// cue in a test.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDockerClient } from "./docker-client.ts";

const LATE_MS = 6_000;

describe("Docker call deadlines on a busy engine", () => {
  let dir = "";
  let server: Server;
  let socketPath = "";

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "berth-busy-engine-"));
    socketPath = join(dir, "docker.sock");
    server = createServer((req, res) => {
      const answer = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      const late = setTimeout(() => {
        if (req.url?.includes("/images/")) return answer({ Id: "sha256:1", RepoTags: ["berth-test/erp:17.0"] });
        if (req.url?.endsWith("/version")) return answer({ Version: "99.0.0", ApiVersion: "1.99" });
        res.writeHead(404).end();
      }, LATE_MS);
      req.socket.on("close", () => clearTimeout(late));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("a command's image inspect waits for a late answer; the sampler's version reading does not", async () => {
    const docker = createDockerClient({ socketPath });
    const [exists, version] = await Promise.allSettled([docker.imageExists("berth-test/erp:17.0"), docker.version()]);
    expect(exists).toEqual({ status: "fulfilled", value: true });
    expect(version).toMatchObject({ status: "rejected", reason: { code: "deadline_exceeded", message: "docker version did not answer within 5000 ms" } });
  }, 20_000);
});
