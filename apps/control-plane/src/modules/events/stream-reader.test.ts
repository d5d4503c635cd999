import { describe, expect, it } from "vitest";
import type { StreamRow } from "./event-log.repo.ts";
import { framesOf } from "./stream-reader.ts";

const blank = { project_id: null, type: null, data: null, deployment_id: null, level: null, message: null, step: null, ms: null };
const log = (tx: number, id: number, message = `line ${id}`): StreamRow => ({
  ...blank,
  k: 0,
  tx: String(tx),
  id: String(id),
  project_id: "p1",
  deployment_id: "d1",
  level: "info",
  message,
  step: "build",
  ms: "1700000000000",
});
const ev = (tx: number, id: number, type = "deployment.status"): StreamRow => ({ ...blank, k: 1, tx: String(tx), id: String(id), project_id: "p1", type, data: `{"n":${id}}` });
/** The marker row: the reading snapshot's xmin, and whether rows wait above it. */
const marker = (xmin: number, heldBack = false): StreamRow => ({ ...blank, k: 2, tx: String(xmin), id: heldBack ? "1" : "0" });
const start = { log: { tx: 0n, id: 0n }, ev: { tx: 0n, id: 0n } };
const ids = (r: ReturnType<typeof framesOf>) => r.frames.map((f) => /^id: (\S+)/.exec(f.text)![1]);

describe("the frames of one page", () => {
  it("merges both tables in tx order (a log line first on a tie) with ids naming both positions", () => {
    const r = framesOf([ev(10, 1), ev(30, 2), log(10, 5), log(20, 6), marker(100)], start, 50, 1700000000);
    expect(r.frames.map((f) => f.type)).toEqual(["deployment.log", "deployment.status", "deployment.log", "deployment.status"]);
    expect(ids(r)).toEqual(["10.5-0.0-1700000000", "10.5-10.1-1700000000", "20.6-10.1-1700000000", "20.6-30.2-1700000000"]);
    expect(r.frames[0]!.text).toBe(
      `id: 10.5-0.0-1700000000\nevent: deployment.log\ndata: {"id":"5","deployment_id":"d1","level":"info","message":"line 5","step":"build","timestamp":"2023-11-14T22:13:20.000Z"}\n\n`,
    );
    expect(r.frames[1]!.text).toBe(`id: 10.5-10.1-1700000000\nevent: deployment.status\ndata: {"n":1}\n\n`);
  });

  it("sorts log lines the join returned out of order", () => {
    const r = framesOf([log(20, 6), log(10, 5), marker(100)], start, 50, 1);
    expect(r.frames.map((f) => f.pos.id)).toEqual([5n, 6n]);
  });

  it("moves both positions up to the horizon (xmin, 0) once everything below it is read", () => {
    const r = framesOf([log(10, 5), marker(100)], start, 50, 1);
    expect(r.more).toBe(false);
    expect(r.log).toEqual({ tx: 100n, id: 0n });
    expect(r.ev).toEqual({ tx: 100n, id: 0n });
  });

  it("stops the other table at the end of a full page and asks to read again", () => {
    // The log page is full (batch 2) and ends at tx 20: events above tx 20 wait for the next read.
    const r = framesOf([log(10, 1), log(20, 2), ev(15, 7), ev(25, 8), marker(100)], start, 2, 1);
    expect(r.more).toBe(true);
    expect(r.frames.map((f) => `${f.table}:${f.pos.tx}`)).toEqual(["0:10", "1:15", "0:20"]);
    expect(r.log).toEqual({ tx: 20n, id: 2n });
    expect(r.ev).toEqual({ tx: 15n, id: 7n });
  });

  it("keeps a position where it was when a page brings nothing of its table, until caught up", () => {
    const from = { log: { tx: 5n, id: 3n }, ev: { tx: 6n, id: 4n } };
    const full = framesOf([log(10, 1), log(20, 2), marker(100)], from, 2, 1);
    expect(full.ev).toBe(from.ev);
    const empty = framesOf([marker(3)], from, 2, 1);
    expect(empty.log).toBe(from.log); // the horizon is behind: positions never go back
    expect(empty.ev).toBe(from.ev);
  });

  it("reports rows that a still-running older transaction holds back", () => {
    expect(framesOf([marker(100, true)], start, 50, 1).heldBack).toBe(true);
    expect(framesOf([marker(100, false)], start, 50, 1).heldBack).toBe(false);
  });
});
