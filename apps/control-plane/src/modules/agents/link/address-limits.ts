// What an address may cost a replica before it proves to be an enrolled agent: a hello
// costs a database query (the server's key), and a connection costs a socket, a challenge
// and buffers. Per address, at most `handshakesPerAddress` connections whose handshake has
// not ended, and `hellosPerAddressPerMinute` hellos, counted before the query. The address
// is the request's (request.ip: the socket's, or what a trusted proxy forwards).
import type { LinkLimits } from "./limits.ts";

const MINUTE_MS = 60_000;

export function createAddressLimits(opts: Pick<LinkLimits, "handshakesPerAddress" | "hellosPerAddressPerMinute"> & { now(): number }) {
  const handshaking = new Map<string, number>();
  // One window for every address, started afresh each minute: what is kept is at most one
  // count per address heard from this minute.
  let windowStart = opts.now();
  let hellos = new Map<string, number>();

  return {
    /** A connection from `address` begins its handshake; false (and nothing counted) when the address has its fill. */
    admit(address: string): boolean {
      const open = handshaking.get(address) ?? 0;
      if (open >= opts.handshakesPerAddress) return false;
      handshaking.set(address, open + 1);
      return true;
    },

    /** A connection admitted from `address` finished its handshake or closed; call once per admit. */
    release(address: string) {
      const open = (handshaking.get(address) ?? 0) - 1;
      if (open > 0) handshaking.set(address, open);
      else handshaking.delete(address);
    },

    /** A hello from `address` may be looked up; false past the per-minute limit. */
    takeHello(address: string): boolean {
      const now = opts.now();
      if (now - windowStart >= MINUTE_MS) {
        windowStart = now;
        hellos = new Map();
      }
      const taken = hellos.get(address) ?? 0;
      if (taken >= opts.hellosPerAddressPerMinute) return false;
      hellos.set(address, taken + 1);
      return true;
    },

    /** Connections in their handshake, all addresses together. */
    handshaking: () => [...handshaking.values()].reduce((a, b) => a + b, 0),
  };
}
export type AddressLimits = ReturnType<typeof createAddressLimits>;
