// Reads a V8 CPU profile (.cpuprofile) into the few lists that say where a phase's time went:
// self time by function and by area (package or repo file), and inclusive time of the repo's
// own functions (the synchronous part of each call; awaits end a sample's stack).
import type { ProfileSummary } from "./ipc.ts";

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const IDLE = new Set(["(idle)", "(program)"]);

function area(url: string, fn: string): string {
  if (url === "") return fn.startsWith("(") ? fn : "(native)";
  if (url.startsWith("node:")) return "node:" + url.slice(5).split("/")[0];
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const repo = url.match(/\/(apps|packages|test)\/(.*)$/);
  return repo ? `${repo[1]}/${repo[2]}` : url;
}

function isRepo(url: string): boolean {
  return !url.includes("/node_modules/") && /\/(apps|packages)\//.test(url);
}

function top(map: Map<string, number>, n: number): [string, number][] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => [k, Math.round(v)]);
}

export function summarizeProfile(profile: CpuProfile, file: string): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const label = (id: number): string => {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const name = functionName || "(anonymous)";
    if (url === "") return name;
    return `${name} ${area(url, name)}:${lineNumber + 1}`;
  };

  const selfMs = new Map<number, number>();
  let sampledUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    sampledUs += us;
    const id = profile.samples[i]!;
    selfMs.set(id, (selfMs.get(id) ?? 0) + us / 1000);
  }

  const selfByFunction = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busyMs = 0;
  for (const [id, ms] of selfMs) {
    const node = byId.get(id)!;
    const fn = node.callFrame.functionName;
    if (IDLE.has(fn)) continue;
    busyMs += ms;
    const key = label(id);
    selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + ms);
    const a = area(node.callFrame.url, fn);
    selfByArea.set(a, (selfByArea.get(a) ?? 0) + ms);
    // Every distinct repo function on this stack gets the time once.
    const onStack = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (isRepo(n.callFrame.url)) onStack.add(label(cur));
    }
    for (const k of onStack) inclusive.set(k, (inclusive.get(k) ?? 0) + ms);
  }

  return {
    file,
    sampledMs: Math.round(sampledUs / 1000),
    busyMs: Math.round(busyMs),
    selfByFunction: top(selfByFunction, 15),
    selfByArea: top(selfByArea, 12),
    inclusiveRepo: top(inclusive, 15),
  };
}
