import { expect, it } from "vitest";
import { parseRange } from "./byte-range.ts";

it("reads one byte range, ignores what it cannot read, and says when a range is past the end", () => {
  expect(parseRange(undefined, 100)).toEqual({ kind: "whole" });
  expect(parseRange("bytes=0-9", 100)).toEqual({ kind: "partial", start: 0, end: 9 });
  expect(parseRange("bytes=90-", 100)).toEqual({ kind: "partial", start: 90, end: 99 });
  expect(parseRange("bytes=90-500", 100)).toEqual({ kind: "partial", start: 90, end: 99 });
  expect(parseRange("bytes=-10", 100)).toEqual({ kind: "partial", start: 90, end: 99 });
  expect(parseRange("bytes=-500", 100)).toEqual({ kind: "partial", start: 0, end: 99 });
  expect(parseRange("bytes=100-", 100)).toEqual({ kind: "unsatisfiable" });
  expect(parseRange("bytes=-0", 100)).toEqual({ kind: "unsatisfiable" });
  for (const ignored of ["bytes=0-1,5-6", "items=0-1", "bytes=-", "bytes=5-1", "nonsense"]) expect(parseRange(ignored, 100)).toEqual({ kind: "whole" });
});
