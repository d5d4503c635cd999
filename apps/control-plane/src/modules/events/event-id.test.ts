import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import { httpStatusOf } from "../../lib/error-codes.ts";
import { after, atLeast, decodeCursor, encodeCursor, parseLastEventId } from "./event-id.ts";

describe("event ids", () => {
  it("encode both tables' positions and the time, and decode to the same", () => {
    const c = { log: { tx: 18446744073709551615n, id: 42n }, ev: { tx: 7n, id: 0n }, at: 1_800_000_000 };
    const text = encodeCursor(c);
    expect(text).toBe("18446744073709551615.42-7.0-1800000000");
    expect(decodeCursor(text)).toEqual(c);
  });

  it.each(["", "1.2-3.4", "1.2-3.4-5-6", "a.b-c.d-e", "1.2-3.4--5", "99999999999999999999.1-1.1-1", " 1.2-3.4-5x"])("refuses %j with a coded 400", (text) => {
    expect(decodeCursor(text)).toBeNull();
    try {
      parseLastEventId(text);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      expect(httpStatusOf((err as DomainError).code)).toBe(400);
      expect((err as DomainError).code).toBe("invalid_last_event_id");
    }
  });

  it("orders positions by transaction, then row", () => {
    expect(after({ tx: 2n, id: 1n }, { tx: 1n, id: 99n })).toBe(true);
    expect(after({ tx: 1n, id: 5n }, { tx: 1n, id: 4n })).toBe(true);
    expect(after({ tx: 1n, id: 4n }, { tx: 1n, id: 4n })).toBe(false);
    expect(atLeast({ tx: 1n, id: 4n }, { tx: 1n, id: 4n })).toBe(true);
    expect(atLeast({ tx: 1n, id: 3n }, { tx: 1n, id: 4n })).toBe(false);
  });
});
