// A network namespace with a veth pair, so one real agent runs behind a link the drill can
// cut for real: the agent (inside, 10.251.0.2) reaches HAProxy on the host side of the veth
// (10.251.0.1). cut() takes the host side down (packets are dropped, no reset is sent, as
// when a cable or a route goes away); restore() brings it back. remove() always cleans up.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);

export const NETNS_HOST_ADDRESS = "10.251.0.1";
export const NETNS_AGENT_ADDRESS = "10.251.0.2";

export interface Netns {
  name: string;
  /** The command prefix that runs a program inside. */
  prefix: string[];
  cut(): Promise<void>;
  restore(): Promise<void>;
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  await exec("ip", args);
}

export async function createNetns(tag: string): Promise<Netns> {
  const name = `berth-drill-${tag}`;
  const hostIf = `bd${tag}h`;
  const nsIf = `bd${tag}n`;
  const remove = async () => {
    await ip("link", "del", hostIf).catch(() => {});
    await ip("netns", "del", name).catch(() => {});
  };
  await remove(); // a namespace left by a drill that was killed
  try {
    await ip("netns", "add", name);
    await ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf);
    await ip("link", "set", nsIf, "netns", name);
    await ip("addr", "add", `${NETNS_HOST_ADDRESS}/30`, "dev", hostIf);
    await ip("link", "set", hostIf, "up");
    await ip("netns", "exec", name, "ip", "addr", "add", `${NETNS_AGENT_ADDRESS}/30`, "dev", nsIf);
    await ip("netns", "exec", name, "ip", "link", "set", nsIf, "up");
    await ip("netns", "exec", name, "ip", "link", "set", "lo", "up");
  } catch (err) {
    await remove();
    throw new Error(`cannot make a network namespace here (${(err as Error).message.trim()})`);
  }
  return {
    name,
    prefix: ["ip", "netns", "exec", name],
    cut: () => ip("link", "set", hostIf, "down"),
    restore: () => ip("link", "set", hostIf, "up"),
    remove,
  };
}
