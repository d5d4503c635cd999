// Size and use of the filesystem holding a path: one statfs(2) call, no `df` process, so it
// cannot hang on a stale network mount elsewhere on the host the way `df` can.
import { statfs } from "node:fs/promises";
import { withDeadline } from "../with-deadline.ts";

export const BYTES_PER_GB = 1024 ** 3;
export const BYTES_PER_MB = 1024 ** 2;

export interface FilesystemUsage {
  total_bytes: number;
  /** As df counts it: blocks not free, reserved blocks included in neither. */
  used_bytes: number;
  /** What an unprivileged writer may still use. */
  available_bytes: number;
}

export async function filesystemUsage(path: string, deadlineMs = 2_000): Promise<FilesystemUsage> {
  const fs = await withDeadline(statfs(path), deadlineMs, `statfs ${path}`);
  return {
    total_bytes: fs.blocks * fs.bsize,
    used_bytes: (fs.blocks - fs.bfree) * fs.bsize,
    available_bytes: fs.bavail * fs.bsize,
  };
}

/** Rounded for display; two decimals of a GiB is 10 MiB, plenty for capacity. */
export function toGb(bytes: number): number {
  return Math.round((bytes / BYTES_PER_GB) * 100) / 100;
}
