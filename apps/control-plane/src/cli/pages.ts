// The public API's lists come in pages (cursor pagination, at most 100 items a page); the CLI
// shows whole lists, so it follows the cursors to the end.
export interface Page<T> {
  data: T[];
  pagination: { has_more: boolean; next_cursor: string | null };
}

export async function allPages<T>(page: (query: { limit: number; cursor?: string }) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await page({ limit: 100, ...(cursor ? { cursor } : {}) });
    items.push(...p.data);
    if (!p.pagination.has_more || !p.pagination.next_cursor) return items;
    cursor = p.pagination.next_cursor;
  }
}
