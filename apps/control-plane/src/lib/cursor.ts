// Opaque, tamper-proof pagination cursors: the position (created_at, id) and the list it
// belongs to, signed with an instance secret so a forged or foreign cursor is refused.
import { createHmac, timingSafeEqual } from "node:crypto";
import { DomainError } from "./errors.ts";

export interface CursorPosition {
  createdAt: Date;
  id: string;
}

export interface CursorCodec {
  encode(list: string, pos: CursorPosition): string;
  /** Throws 400 invalid_cursor when the cursor is malformed, forged, or from another list. */
  decode(list: string, cursor: string): CursorPosition;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createCursorCodec(secret: string): CursorCodec {
  const mac = (data: string) => createHmac("sha256", secret).update(data).digest().subarray(0, 16);
  const invalid = () => new DomainError("invalid_cursor", "The cursor is not valid for this list; use pagination.next_cursor from a previous page");
  return {
    encode(list, pos) {
      const body = Buffer.from(JSON.stringify([list, pos.createdAt.getTime(), pos.id])).toString("base64url");
      return `${body}.${mac(body).toString("base64url")}`;
    },
    decode(list, cursor) {
      const [body, sig, extra] = cursor.split(".");
      if (!body || !sig || extra !== undefined) throw invalid();
      const given = Buffer.from(sig, "base64url");
      const want = mac(body);
      if (given.length !== want.length || !timingSafeEqual(given, want)) throw invalid();
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
      } catch {
        throw invalid();
      }
      if (!Array.isArray(parsed) || parsed.length !== 3) throw invalid();
      const [l, t, id] = parsed as unknown[];
      if (l !== list || typeof t !== "number" || !Number.isFinite(t) || typeof id !== "string" || !UUID.test(id)) throw invalid();
      return { createdAt: new Date(t), id };
    },
  };
}
