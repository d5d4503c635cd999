// The dump the agent restores is the dump the control plane analysed: for archives with
// several candidates in awkward orders, the analysis (readBackup's dumpPath) and the agent's
// reader (readErpArchive, which streams the member it picks to psql) name the same member, and
// the agent streams that member's bytes.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readErpArchive } from "../../apps/agent/src/executor/backup/erp-archive.ts";
import { bufferSource, tarOf, zipOf } from "../../apps/control-plane/src/modules/migrations/analysis/backup-fixtures.test-helpers.ts";
import { readBackup } from "../../apps/control-plane/src/modules/migrations/analysis/read-backup.ts";
import { DEFAULT_INFLATE_LIMITS } from "../../apps/control-plane/src/modules/migrations/analysis/zip-archive.ts";

const sql = (marker: string) => Buffer.from(`-- ${marker}\nCREATE TABLE ${marker} (id integer);\n`);

let dir = "";
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-dump-member-"));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function agentReads(bytes: Buffer, name: string): Promise<{ member: string; text: string }> {
  const file = path.join(dir, name);
  await writeFile(file, bytes);
  let text = "";
  const { dump } = await readErpArchive(file, {
    async onDump(stream) {
      for await (const chunk of stream) text += (chunk as Buffer).toString("utf8");
    },
    async onFile({ stream }) {
      stream.resume();
      await new Promise((r) => stream.on("end", r));
    },
  });
  return { member: dump, text };
}

const cases: { name: string; members: string[]; expected: string }[] = [
  // The agent used to take the first *.sql in the zip, the analysis dump.sql.
  { name: "another .sql before dump.sql", members: ["extra.sql", "manifest.json", "dump.sql"], expected: "dump.sql" },
  { name: "a folder's dump.sql after a top-level .sql", members: ["notes.sql", "backup/dump.sql"], expected: "backup/dump.sql" },
  { name: "a .sql under filestore/ first", members: ["filestore/ab/evil.sql", "dump.sql"], expected: "dump.sql" },
  { name: "a .dump only", members: ["manifest.json", "db.dump"], expected: "db.dump" },
];

describe("the dump restored is the dump analysed", () => {
  for (const c of cases) {
    it(`zip, ${c.name}: both take ${c.expected}`, async () => {
      const bytes = await zipOf(c.members.map((name) => ({ name, bytes: name.endsWith(".json") ? Buffer.from("{}") : sql(name.replace(/\W/g, "_")) })));
      const analysed = await readBackup(bufferSource(bytes), DEFAULT_INFLATE_LIMITS);
      const agent = await agentReads(bytes, `${c.name.replace(/\W/g, "_")}.zip`);
      expect(analysed.dumpPath).toBe(c.expected);
      expect(agent.member).toBe(c.expected);
      expect(agent.text).toBe(sql(c.expected.replace(/\W/g, "_")).toString("utf8"));
    });
  }

  it("tar.gz (read as a stream): both take the first candidate, skipping one under filestore/", async () => {
    const members = ["filestore/ab/evil.sql", "./first.sql", "dump.sql"];
    const bytes = await tarOf(members.map((name) => ({ name, bytes: sql(name.replace(/\W/g, "_")) })));
    const analysed = await readBackup(bufferSource(bytes), DEFAULT_INFLATE_LIMITS);
    const agent = await agentReads(bytes, "stream.tar.gz");
    expect(analysed.dumpPath).toBe("first.sql");
    expect(agent.member).toBe("first.sql");
    expect(agent.text).toBe(sql("__first_sql").toString("utf8"));
  });
});
