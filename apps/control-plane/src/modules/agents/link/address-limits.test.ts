import { describe, expect, it } from "vitest";
import { createAddressLimits } from "./address-limits.ts";

function limits(handshakesPerAddress = 2, hellosPerAddressPerMinute = 3) {
  let now = 1_000_000;
  const l = createAddressLimits({ handshakesPerAddress, hellosPerAddressPerMinute, now: () => now });
  return { l, advance: (ms: number) => (now += ms) };
}

describe("address limits", () => {
  it("admits a few handshakes per address at once, and another once one ends", () => {
    const { l } = limits(2);
    expect(l.admit("10.0.0.1")).toBe(true);
    expect(l.admit("10.0.0.1")).toBe(true);
    expect(l.admit("10.0.0.1")).toBe(false);
    expect(l.admit("10.0.0.2")).toBe(true);
    expect(l.handshaking()).toBe(3);
    l.release("10.0.0.1");
    expect(l.admit("10.0.0.1")).toBe(true);
    expect(l.admit("10.0.0.1")).toBe(false);
  });

  it("forgets an address whose handshakes all ended", () => {
    const { l } = limits(1);
    expect(l.admit("10.0.0.1")).toBe(true);
    l.release("10.0.0.1");
    expect(l.handshaking()).toBe(0);
    expect(l.admit("10.0.0.1")).toBe(true);
  });

  it("takes so many hellos per address a minute, then none until the next minute", () => {
    const { l, advance } = limits(2, 3);
    for (let i = 0; i < 3; i++) expect(l.takeHello("10.0.0.1")).toBe(true);
    expect(l.takeHello("10.0.0.1")).toBe(false);
    expect(l.takeHello("10.0.0.2")).toBe(true);
    advance(59_999);
    expect(l.takeHello("10.0.0.1")).toBe(false);
    advance(1);
    expect(l.takeHello("10.0.0.1")).toBe(true);
  });
});
