import { describe, expect, it } from "vitest";
import { DeadlineError, withDeadline } from "./with-deadline.ts";

describe("withDeadline", () => {
  it("settles like the promise when it is in time", async () => {
    await expect(withDeadline(Promise.resolve(7), 100, "quick")).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error("boom")), 100, "quick")).rejects.toThrow("boom");
  });

  it("rejects with a DeadlineError naming the call when it is late", async () => {
    const never = new Promise<never>(() => {});
    const late = withDeadline(never, 30, "docker info");
    await expect(late).rejects.toBeInstanceOf(DeadlineError);
    await expect(late).rejects.toThrow("docker info did not answer within 30 ms");
  });
});
