// The ERP image's user, read from the image by a one-off `id` container: deploys of one image
// that start together (an agent deploying several environments) share one probe, later ones
// ask no engine at all, and each tag answers with the user its Odoo image has.
import { describe, expect, it } from "vitest";
import { DOCKER_SOCKET } from "../../agent/agent.test-helpers.ts";
import { createDockerClient, type DockerClient } from "../../docker/docker-client.ts";
import { erpUserOf } from "./erp-image-user.ts";

describe("the ERP image's user", () => {
  it("is probed once per image, also when deploys ask at the same time", async () => {
    const docker = createDockerClient({ socketPath: DOCKER_SOCKET });
    const probes: string[] = [];
    const counting: DockerClient = {
      ...docker,
      runToCompletion: (spec, options) => {
        probes.push(spec.image);
        return docker.runToCompletion(spec, options);
      },
    };
    const [a, b, c] = await Promise.all([
      erpUserOf(counting, "berth-test/erp:18.0"),
      erpUserOf(counting, "berth-test/erp:18.0"),
      erpUserOf(counting, "berth-test/erp:17.0"),
    ]);
    expect([a, b, c]).toEqual([{ uid: 100, gid: 101 }, { uid: 100, gid: 101 }, { uid: 101, gid: 101 }]);
    expect(await erpUserOf(counting, "berth-test/erp:18.0")).toEqual({ uid: 100, gid: 101 });
    expect(probes).toHaveLength(2);
  }, 60_000);
});
