// The command outbox under concurrency, right after start (signing key not loaded yet).
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

it("more concurrent issues than pool connections complete on a cold signer (no pool deadlock)", async () => {
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  // A fresh control plane on the same database: its signer has never loaded the key.
  const fresh = await startControlPlane({ url: cp.url });
  try {
    const issue = () =>
      fresh.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId: d.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
    const rows = await Promise.race([
      Promise.all(Array.from({ length: 40 }, issue)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("issue() deadlocked the pool")), 15_000)),
    ]);
    expect(new Set(rows.map((r) => r.seq)).size).toBe(40);
  } finally {
    await fresh.stop();
  }
}, 30_000);
