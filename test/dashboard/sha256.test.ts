// The dashboard's incremental SHA-256 (public/sha256.js, which hashes migration backups in the
// browser slice by slice) against node:crypto: every padding boundary, input fed in uneven
// pieces, and a Blob larger than one 4 MiB slice read through sha256OfFile.
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { expect, it } from "vitest";

interface Sha256Module {
  Sha256: new () => { update(data: Uint8Array): unknown; hex(): string };
  sha256OfFile(file: Blob, onProgress?: (done: number) => void): Promise<string>;
}

// A browser module without types: loaded by URL.
const load = async () => (await import(pathToFileURL(path.resolve(import.meta.dirname, "../../apps/control-plane/src/dashboard/public/sha256.js")).href)) as Sha256Module;
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

it("matches node:crypto at every padding boundary, whatever the pieces it is fed in", async () => {
  const { Sha256 } = await load();
  for (const size of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 65_537]) {
    const data = randomBytes(size);
    for (const piece of [1, 7, 64, 100_000]) {
      const h = new Sha256();
      for (let at = 0; at < size; at += piece) h.update(data.subarray(at, at + piece));
      expect(h.hex(), `${size} bytes in pieces of ${piece}`).toBe(sha(data));
    }
  }
  expect(new Sha256().hex()).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
});

it("hashes a Blob larger than a slice, reporting progress up to its size", async () => {
  const { sha256OfFile } = await load();
  const data = randomBytes(9 * 1024 * 1024 + 3);
  const seen: number[] = [];
  expect(await sha256OfFile(new Blob([data]), (n) => seen.push(n))).toBe(sha(data));
  expect(seen).toEqual([4 * 1024 * 1024, 8 * 1024 * 1024, data.length]);
});
