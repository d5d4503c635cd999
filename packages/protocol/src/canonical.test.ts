import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "./canonical.ts";

describe("canonicalize", () => {
  it("sorts keys recursively and drops whitespace", () => {
    expect(canonicalize({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it("ignores the order keys were inserted in", () => {
    expect(canonicalize({ x: 1, y: { p: true, q: false } })).toBe(canonicalize({ y: { q: false, p: true }, x: 1 }));
  });

  it("keeps array order", () => {
    expect(canonicalize([3, 1, 2])).toBe("[3,1,2]");
    expect(canonicalize([])).toBe("[]");
    expect(canonicalize({})).toBe("{}");
  });

  it("writes numbers as ECMAScript does (RFC 8785)", () => {
    expect(canonicalize([0, -0, 1.5, 1e21, 1e-7, -12, 100])).toBe("[0,0,1.5,1e+21,1e-7,-12,100]");
  });

  it("sorts keys by UTF-16 code units and keeps unicode text as is", () => {
    // "\u20ac" (euro) sorts before "\ud83d\ude00" (emoji) by code unit, as RFC 8785 requires.
    expect(canonicalize({ "\ud83d\ude00": 1, "\u20ac": 2, é: 3, e: 4 })).toBe('{"e":4,"é":3,"€":2,"😀":1}');
    expect(canonicalize("Müller — 東京 ✓ 😀")).toBe('"Müller — 東京 ✓ 😀"');
  });

  it("escapes control characters, quotes and backslashes like JSON", () => {
    expect(canonicalize('a"b\\c\n\u0001')).toBe('"a\\"b\\\\c\\n\\u0001"');
  });

  it.each([
    ["undefined", undefined],
    ["undefined in an object", { a: undefined }],
    // eslint-disable-next-line no-sparse-arrays -- the hole is the point
    ["a hole in an array", [1, , 3]],
    ["NaN", Number.NaN],
    ["Infinity", { n: Number.POSITIVE_INFINITY }],
    ["a bigint", 1n],
    ["a function", () => 1],
    ["a symbol", Symbol("s")],
    ["a Date", new Date(0)],
    ["a Map", new Map()],
    ["a lone surrogate", "\ud800"],
    ["a lone surrogate in a key", { "\udc00": 1 }],
  ])("rejects %s", (_name, value) => {
    expect(() => canonicalize(value)).toThrow(TypeError);
  });

  it("rejects cycles but allows a shared subtree", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalize(cyclic)).toThrow(/cycle/);
    const shared = { n: 1 };
    expect(canonicalize({ a: shared, b: shared })).toBe('{"a":{"n":1},"b":{"n":1}}');
  });

  it("accepts objects without a prototype", () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare.b = 2;
    bare.a = 1;
    expect(canonicalize(bare)).toBe('{"a":1,"b":2}');
  });
});

// JSON values without -0, which JSON cannot tell apart from 0 after a round trip.
const json = fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as unknown);

function shuffleKeys(value: unknown, rotate: number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, rotate));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  const shift = entries.length === 0 ? 0 : rotate % entries.length;
  const reordered = [...entries.slice(shift), ...entries.slice(0, shift)].reverse();
  return Object.fromEntries(reordered.map(([key, item]) => [key, shuffleKeys(item, rotate + 1)]));
}

describe("canonicalize properties", () => {
  it("is stable under key reordering", () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, rotate) => {
        expect(canonicalize(shuffleKeys(value, rotate))).toBe(canonicalize(value));
      }),
    );
  });

  it("is valid JSON that parses back to the same value", () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(JSON.parse(canonicalize(value))).toStrictEqual(value);
      }),
    );
  });

  it("is a fixed point: canonicalising canonical text's value changes nothing", () => {
    fc.assert(
      fc.property(json, (value) => {
        const once = canonicalize(value);
        expect(canonicalize(JSON.parse(once))).toBe(once);
      }),
    );
  });
});
