// Named integer counters in the meta table, read and written inside the callers' transactions.
import type { JournalDb } from "./database.ts";

export type MetaKey =
  | "next_event_seq"
  | "last_acked_seq"
  | "last_command_seq"
  | "forgotten_command_seq"
  | "pending_count"
  | "pending_bytes"
  | "drop_notice_seq";

export interface Meta {
  get(key: MetaKey): number;
  set(key: MetaKey, value: number): void;
  add(key: MetaKey, delta: number): void;
  raise(key: MetaKey, atLeast: number): void;
}

export function createMeta(db: JournalDb): Meta {
  const select = db.prepare<[MetaKey], { value: number }>("SELECT value FROM meta WHERE key = ?");
  const update = db.prepare<[number, MetaKey]>("UPDATE meta SET value = ? WHERE key = ?");
  const increment = db.prepare<[number, MetaKey]>("UPDATE meta SET value = value + ? WHERE key = ?");
  const maximum = db.prepare<[number, MetaKey]>("UPDATE meta SET value = max(value, ?) WHERE key = ?");

  return {
    get(key) {
      const value = select.get(key)?.value;
      // Every key is inserted by the first migration; a missing one means a damaged file.
      if (value === undefined) throw new Error(`journal meta key ${key} is missing`);
      return value;
    },
    set: (key, value) => void update.run(value, key),
    add: (key, delta) => void increment.run(delta, key),
    raise: (key, atLeast) => void maximum.run(atLeast, key),
  };
}
