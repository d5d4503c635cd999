// `berth servers` with both kinds of credentials: the list and one server, and a new server
// with its one-time enrolment token and install command.
import { describe, expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { json, signedInPerson, withApiKey, type Run } from "../support/cli-people.ts";

const s = cliSuite();

describe.each([
  ["an API key", () => Promise.resolve(withApiKey(s, s.d.api_keys.org_rw))],
  ["a signed-in person", () => signedInPerson(s)],
])("with %s", (who, as) => {
  it("lists and shows servers, and adds one with its enrolment token", async () => {
    const run: Run = await as();
    // The demo server's simulated agent is connected and has reported its machine.
    const list = await json<{ id: string; cpu_cores: number; ram_mb: number; agent_version: string }[]>(run, ["servers", "list"]);
    const demo = list.find((x) => x.id === s.d.server_id);
    expect(demo).toMatchObject({ agent_version: "sim-1.0.0" });
    expect(await json(run, ["servers", "show", s.d.server_id])).toMatchObject({ id: s.d.server_id, cpu_cores: demo!.cpu_cores, ram_mb: demo!.ram_mb });

    const created = await run(["servers", "create", "--name", `cli-${who.replace(/\W/g, "-")}`]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^Enrolment token:\s+\S{16,}$/m);
    expect((await json<{ name: string }[]>(run, ["servers", "list"])).map((x) => x.name)).toContain(`cli-${who.replace(/\W/g, "-")}`);
  });
});
