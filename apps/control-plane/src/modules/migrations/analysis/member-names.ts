// Names of archive members: which are unsafe (never used as paths, only reported), and which
// role a member plays in an ERP backup (dump, manifest, file store).
import { dumpMemberRank } from "@berth/protocol";

/** True for a name that could escape a folder if it were ever used as a path. */
export function isUnsafeMemberName(name: string): boolean {
  if (name.includes("\0") || name.startsWith("/") || name.startsWith("\\") || /^[A-Za-z]:/.test(name)) return true;
  return name.split(/[\\/]+/).some((segment) => segment === "..");
}

/** The name without a leading "./" and with forward slashes (the agent compares names the same way). */
export { normalizeMemberName } from "@berth/protocol";

/** A name shown in a message: printable, at most 120 characters. */
export function displayName(name: string): string {
  const printable = name.replace(/[^\x20-\x7e]/g, "?");
  return JSON.stringify(printable.length > 120 ? `${printable.slice(0, 117)}...` : printable);
}

export type MemberRole = "dump" | "manifest" | "filestore_file" | "filestore_archive" | "other";

/**
 * What a member is, by its place in the archive (its bytes are checked later): a dump
 * candidate (@berth/protocol's dumpMemberRank: `dump.sql`, also under one top folder, or any
 * *.sql / *.dump), `manifest.json`, files under `filestore/`, or a compressed file store
 * (`filestore.tar.gz`, `filestore.zip`, ...).
 */
export function memberRole(name: string): MemberRole {
  const parts = name.split("/").filter(Boolean);
  const base = parts.at(-1) ?? "";
  const depth = parts.length;
  const fsAt = parts.indexOf("filestore");
  if (fsAt >= 0 && fsAt < depth - 1 && fsAt <= 1) return "filestore_file";
  if (depth <= 2 && base === "manifest.json") return "manifest";
  if (dumpMemberRank(name) !== null) return "dump";
  if (depth <= 2 && /^filestore\.(tar|tar\.gz|tgz|zip)$/i.test(base)) return "filestore_archive";
  return "other";
}
