// A network namespace with a veth pair, so one real agent runs behind a link the drill can
// cut for real: the agent (inside, 10.251.x.y+2) reaches HAProxy on the host side of the veth
// (10.251.x.y+1), a /30 of its own chosen from the drill's process id, so that two drills on
// one machine do not share a namespace or a subnet. cut() takes the host side down (packets
// are dropped, no reset is sent, as when a cable or a route goes away); restore() brings it
// back. remove() always cleans up.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);

export interface Netns {
  name: string;
  /** The host side's address: HAProxy listens there too. */
  hostAddress: string;
  agentAddress: string;
  /** The command prefix that runs a program inside. */
  prefix: string[];
  cut(): Promise<void>;
  restore(): Promise<void>;
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  await exec("ip", args);
}

export async function createNetns(): Promise<Netns> {
  const k = process.pid % 16_000;
  const base = `10.251.${k >> 6}`;
  const first = (k & 63) * 4;
  const hostAddress = `${base}.${first + 1}`;
  const agentAddress = `${base}.${first + 2}`;
  const name = `berth-drill-${k}`;
  const hostIf = `bd${k}h`;
  const nsIf = `bd${k}n`;
  const remove = async () => {
    await ip("link", "del", hostIf).catch(() => {});
    await ip("netns", "del", name).catch(() => {});
  };
  await remove(); // a namespace left by a drill that was killed
  try {
    await ip("netns", "add", name);
    await ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf);
    await ip("link", "set", nsIf, "netns", name);
    await ip("addr", "add", `${hostAddress}/30`, "dev", hostIf);
    await ip("link", "set", hostIf, "up");
    await ip("netns", "exec", name, "ip", "addr", "add", `${agentAddress}/30`, "dev", nsIf);
    await ip("netns", "exec", name, "ip", "link", "set", nsIf, "up");
    await ip("netns", "exec", name, "ip", "link", "set", "lo", "up");
  } catch (err) {
    await remove();
    throw new Error(`cannot make a network namespace here (${(err as Error).message.trim()})`);
  }
  return {
    name,
    hostAddress,
    agentAddress,
    prefix: ["ip", "netns", "exec", name],
    cut: () => ip("link", "set", hostIf, "down"),
    restore: () => ip("link", "set", hostIf, "up"),
    remove,
  };
}
