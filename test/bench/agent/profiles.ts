// Summaries of the agent's --heap-prof and --cpu-prof output, attributed to the package whose
// code in the bundle is nearest on the stack: the bundle is one file, so the profile's URL
// alone says nothing; its line numbers map back to modules (bundle.moduleAt).
import { readFile } from "node:fs/promises";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

interface CpuNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface Attribution {
  name: string;
  /** Bytes (heap) or microseconds (CPU). */
  amount: number;
}

function bucketOf(stack: readonly CallFrame[], bundleFile: string, moduleAt: (line: number) => string): string {
  for (let i = stack.length - 1; i >= 0; i--) {
    const f = stack[i]!;
    if (f.url.endsWith(bundleFile)) return moduleAt(f.lineNumber + 1);
  }
  const leaf = stack[stack.length - 1];
  if (!leaf) return "(root)";
  if (leaf.url.startsWith("node:")) return "node: core";
  if (leaf.url) return leaf.url.replace(/^.*node_modules\//, "").split("/")[0]!;
  return leaf.functionName.startsWith("(") ? leaf.functionName : "(V8 / native)";
}

const sorted = (m: Map<string, number>): Attribution[] =>
  [...m].map(([name, amount]) => ({ name, amount })).sort((a, b) => b.amount - a.amount);

/** Live sampled heap at the profile's end (the agent's exit), by package. */
export async function summariseHeapProfile(file: string, bundleFile: string, moduleAt: (line: number) => string): Promise<{ total: number; by: Attribution[] }> {
  const profile = JSON.parse(await readFile(file, "utf8")) as { head: HeapNode };
  const by = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode, stack: CallFrame[]) => {
    stack.push(node.callFrame);
    if (node.selfSize > 0) {
      const b = bucketOf(stack, bundleFile, moduleAt);
      by.set(b, (by.get(b) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const c of node.children) walk(c, stack);
    stack.pop();
  };
  walk(profile.head, []);
  return { total, by: sorted(by) };
}

/** On-CPU time by package; idle excluded. */
export async function summariseCpuProfile(file: string, bundleFile: string, moduleAt: (line: number) => string): Promise<{ totalUs: number; by: Attribution[] }> {
  const profile = JSON.parse(await readFile(file, "utf8")) as { nodes: CpuNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const by = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const stack: CallFrame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.unshift(byId.get(cur)!.callFrame);
    const b = bucketOf(stack, bundleFile, moduleAt);
    if (b === "(idle)") continue;
    by.set(b, (by.get(b) ?? 0) + us);
    totalUs += us;
  }
  return { totalUs, by: sorted(by) };
}
