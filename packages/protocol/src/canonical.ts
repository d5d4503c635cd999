// Deterministic JSON text for signing: what the control plane signs is byte-for-byte
// what the agent recomputes, whatever order either side built its objects in.
// Follows RFC 8785 (JCS): keys sorted by UTF-16 code units, no whitespace, ECMAScript
// number text, JSON.stringify string escaping.

/**
 * Canonical JSON text of a JSON value. Throws a TypeError on anything JSON cannot carry
 * faithfully (undefined, non-finite numbers, bigint, functions, symbols, class instances,
 * cycles, lone surrogates) rather than letting JSON.stringify drop or coerce it silently:
 * a signature over silently altered data would verify something nobody sent.
 */
export function canonicalize(value: unknown): string {
  return write(value, "$", new Set());
}

function write(value: unknown, path: string, ancestors: Set<object>): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalize: non-finite number at ${path}`);
      return JSON.stringify(value);
    case "string":
      if (hasLoneSurrogate(value)) throw new TypeError(`canonicalize: lone surrogate in string at ${path}`);
      return JSON.stringify(value);
    case "object":
      break;
    default:
      throw new TypeError(`canonicalize: ${typeof value} at ${path} is not JSON`);
  }

  if (ancestors.has(value)) throw new TypeError(`canonicalize: cycle at ${path}`);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items: string[] = [];
      for (let i = 0; i < value.length; i++) {
        // Index access (not iteration) so holes in sparse arrays surface as undefined.
        items.push(write(value[i], `${path}[${i}]`, ancestors));
      }
      return `[${items.join(",")}]`;
    }
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`canonicalize: non-plain object at ${path}`);
    }
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .map((key) => {
        if (hasLoneSurrogate(key)) throw new TypeError(`canonicalize: lone surrogate in key at ${path}`);
        return `${JSON.stringify(key)}:${write(record[key], `${path}.${key}`, ancestors)}`;
      });
    return `{${members.join(",")}}`;
  } finally {
    ancestors.delete(value);
  }
}

// In "u" mode a well-formed surrogate pair is one code point, so only lone halves match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}
