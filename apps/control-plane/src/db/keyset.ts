// Keyset pagination over (created_at, id), newest first: stable while rows are added,
// and every row is visited exactly once.
import { desc, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { CursorCodec, CursorPosition } from "../lib/cursor.ts";
import { notFound } from "../lib/errors.ts";
import type { Scope } from "../lib/scope.ts";

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

/** The two reads every organisation-scoped resource has: a page of views, and one view or a 404 "<label> not found". */
export function scopedReads<R extends Keyed, O>(opts: {
  codec: CursorCodec;
  /** The list's name, which its cursors are bound to. */
  list: string;
  /** "Project", "API key", …: the 404's message. */
  label: string;
  repo: {
    list(scope: Scope, limit: number, after: CursorPosition | undefined): Promise<{ rows: R[]; total: number }>;
    get(scope: Scope, id: string): Promise<R | undefined>;
  };
  view: (row: R) => O;
}) {
  return {
    list: (scope: Scope, page: PageRequest) => listPage(opts.codec, opts.list, page, (limit, after) => opts.repo.list(scope, limit, after), opts.view),
    async get(scope: Scope, id: string): Promise<O> {
      const row = await opts.repo.get(scope, id);
      if (!row) throw notFound(opts.label);
      return opts.view(row);
    },
  };
}
