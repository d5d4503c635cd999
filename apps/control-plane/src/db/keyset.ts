// Keyset pagination over (created_at, id), newest first: stable while rows are added,
// and every row is visited exactly once.
import { desc, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { CursorCodec, CursorPosition } from "../lib/cursor.ts";

export interface Keyed {
  createdAt: Date;
  id: string;
}

export function olderThan(createdAt: PgColumn, id: PgColumn, pos: CursorPosition | undefined): SQL | undefined {
  return pos ? sql`(${createdAt}, ${id}) < (${pos.createdAt.toISOString()}::timestamptz, ${pos.id}::uuid)` : undefined;
}

export const newestFirst = (createdAt: PgColumn, id: PgColumn) => [desc(createdAt), desc(id)];

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

/** Turns limit+1 fetched rows into a page envelope. */
export function toPage<R extends Keyed, O>(
  list: string,
  rows: R[],
  total: number,
  req: PageRequest,
  codec: CursorCodec,
  view: (row: R) => O,
) {
  const hasMore = rows.length > req.limit;
  const items = hasMore ? rows.slice(0, req.limit) : rows;
  const last = items[items.length - 1];
  return {
    data: items.map(view),
    pagination: {
      has_more: hasMore,
      next_cursor: hasMore && last ? codec.encode(list, { createdAt: last.createdAt, id: last.id }) : null,
      total,
    },
  };
}

/** Decodes the cursor for `list`, fetches limit+1 rows after it, and builds the page. */
export async function listPage<R extends Keyed, O>(
  codec: CursorCodec,
  list: string,
  req: PageRequest,
  fetch: (limit: number, after: CursorPosition | undefined) => Promise<{ rows: R[]; total: number }>,
  view: (row: R) => O,
) {
  const after = req.cursor ? codec.decode(list, req.cursor) : undefined;
  const { rows, total } = await fetch(req.limit, after);
  return toPage(list, rows, total, req, codec, view);
}
