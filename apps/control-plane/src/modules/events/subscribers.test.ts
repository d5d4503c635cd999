import { describe, expect, it } from "vitest";
import type { Position } from "./event-id.ts";
import type { Frame, ReadResult } from "./stream-reader.ts";
import { createSubscriberRegistry, maySee, outputFor, type Sink, type Subscriber } from "./subscribers.ts";

const pos = (tx: number, id: number): Position => ({ tx: BigInt(tx), id: BigInt(id) });
const frame = (table: 0 | 1, at: Position, projectId: string | null, type: string): Frame => ({ table, pos: at, projectId, type, text: `<${type}@${at.tx}.${at.id}>` });
function sink(buffered = 0): Sink & { out: string[]; ended: boolean } {
  const s = { out: [] as string[], ended: false, write: (c: string) => void s.out.push(c), buffered: () => buffered, end: () => void (s.ended = true) };
  return s;
}
const subscriber = (visible: Set<string> | null, log = pos(0, 0), ev = pos(0, 0), s: Sink = sink()): Subscriber => ({ orgId: "o1", visible, log, ev, sink: s, closed: false });

describe("what a subscriber may see", () => {
  it("everything, when it may see the whole organisation", () => {
    expect(maySee({ visible: null }, { projectId: "p9", type: "deployment.log" })).toBe(true);
  });
  it("its projects' events, and of the others only the organisation-wide types", () => {
    const s = { visible: new Set(["p1"]) };
    expect(maySee(s, { projectId: "p1", type: "deployment.status" })).toBe(true);
    expect(maySee(s, { projectId: "p2", type: "deployment.status" })).toBe(false);
    expect(maySee(s, { projectId: null, type: "server.stats" })).toBe(true);
    expect(maySee(s, { projectId: null, type: "server.status" })).toBe(true);
    expect(maySee(s, { projectId: null, type: "something.else" })).toBe(false);
  });
  it("only its project's events, not even organisation-wide ones, for a project-scoped API key (orgWide false)", () => {
    const s = { visible: new Set(["p1"]), orgWide: false };
    expect(maySee(s, { projectId: "p1", type: "deployment.log" })).toBe(true);
    expect(maySee(s, { projectId: "p2", type: "deployment.log" })).toBe(false);
    expect(maySee(s, { projectId: null, type: "server.stats" })).toBe(false);
    expect(maySee(s, { projectId: null, type: "migration_progress" })).toBe(false);
  });
});

describe("the text a subscriber gets of a page", () => {
  const frames = [frame(0, pos(10, 1), "p1", "deployment.log"), frame(1, pos(11, 1), "p2", "deployment.status"), frame(1, pos(12, 2), null, "server.stats")];
  const page: ReadResult = { frames, log: pos(10, 1), ev: pos(12, 2), more: false, heldBack: false };

  it("is the whole page, built once, for subscribers standing at the shared read's start that see everything", () => {
    const from = { log: pos(0, 0), ev: pos(0, 0) };
    const shared = { all: null as string | null };
    const a = subscriber(null, from.log, from.ev);
    const b = subscriber(null, from.log, from.ev);
    expect(outputFor(a, page, shared, from)).toBe(frames.map((f) => f.text).join(""));
    shared.all = "cached";
    expect(outputFor(b, page, shared, from)).toBe("cached");
  });

  it("leaves out what a project-bound subscriber may not see", () => {
    const from = { log: pos(0, 0), ev: pos(0, 0) };
    const s = subscriber(new Set(["p1"]), from.log, from.ev);
    expect(outputFor(s, page, { all: null }, from)).toBe("<deployment.log@10.1><server.stats@12.2>");
  });

  it("skips, for a subscriber that is not aligned, the rows it already has", () => {
    const s = subscriber(null, pos(10, 1), pos(11, 1));
    expect(outputFor(s, page, { all: null }, null)).toBe("<server.stats@12.2>");
  });
});

describe("the registry", () => {
  it("moves a subscriber on to the page's end and drops one too slow to keep up", () => {
    const registry = createSubscriberRegistry({ maxBufferedBytes: 100 });
    const fast = subscriber(null);
    const slowSink = sink(101);
    const slow = subscriber(null, pos(0, 0), pos(0, 0), slowSink);
    registry.add(fast);
    registry.add(slow);
    const page: ReadResult = { frames: [frame(1, pos(5, 1), null, "server.stats")], log: pos(4, 0), ev: pos(5, 1), more: false, heldBack: false };
    registry.deliver(fast, page, { all: null }, null);
    registry.deliver(slow, page, { all: null }, null);
    expect(fast.log).toBe(page.log);
    expect(fast.ev).toBe(page.ev);
    expect(slow.closed).toBe(true);
    expect(slowSink.ended).toBe(true);
    expect(slowSink.out).toEqual([]);
  });

  it("forgets an organisation's feed when its last subscriber leaves, and ends every stream on close", () => {
    const registry = createSubscriberRegistry({ maxBufferedBytes: 100 });
    const a = subscriber(null);
    registry.add(a);
    expect(registry.orgIds()).toEqual(["o1"]);
    registry.drop(a);
    expect(registry.orgIds()).toEqual([]);
    const b = subscriber(null);
    registry.add(b);
    registry.closeAll();
    expect(b.closed).toBe(true);
    expect(registry.isClosed()).toBe(true);
    expect(registry.orgIds()).toEqual([]);
  });

  it("ends the streams that match, and only those (a person's access went)", () => {
    const registry = createSubscriberRegistry({ maxBufferedBytes: 100 });
    const theirs = { ...subscriber(null), person: { userId: "u1", sessionId: "s1" } };
    const mine = { ...subscriber(null), person: { userId: "u2", sessionId: "s2" } };
    registry.add(theirs);
    registry.add(mine);
    expect(registry.endWhere((s) => s.person?.userId === "u1")).toBe(1);
    expect(theirs.closed).toBe(true);
    expect(mine.closed).toBe(false);
    expect(registry.open()).toEqual([mine]);
  });

  it("sends keep-alives to live subscribers only", () => {
    const registry = createSubscriberRegistry({ maxBufferedBytes: 100 });
    const liveSink = sink();
    const joiningSink = sink();
    const live = subscriber(null, pos(0, 0), pos(0, 0), liveSink);
    registry.add(live);
    registry.add(subscriber(null, pos(0, 0), pos(0, 0), joiningSink));
    registry.feed("o1")!.live.add(live);
    registry.keepAlive();
    expect(liveSink.out).toEqual([": keep-alive\n\n"]);
    expect(joiningSink.out).toEqual([]);
  });
});
