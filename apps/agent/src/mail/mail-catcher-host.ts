// The catcher's life in the agent: started with the agent (its network made or adopted, the
// SMTP server listening on that network's host address), tried again while Docker is not
// there yet, closed at shutdown. Deploys ask it where it listens (odoo.conf's smtp_server
// and smtp_port); an ERP that sends while it is down gets a refused connection, and Odoo
// keeps the mail queued and tries again (mail.mail stays outgoing).
import type { AddressInfo } from "node:net";
import type { EventInput } from "@berth/protocol";
import type { DockerClient } from "../docker/docker-client.ts";
import type { Logger } from "../logger.ts";
import { createMailCatcherServer } from "./mail-catcher.ts";
import { ensureMailNetwork } from "./mail-network.ts";

export interface MailCatcherSettings {
  /** The network whose host address it listens on (BERTH_MAIL_NETWORK). */
  network: string;
  /** Its port there; 0 lets the system choose (tests). */
  port: number;
}

export const DEFAULT_MAIL_CATCHER: MailCatcherSettings = { network: "berth-mail", port: 2525 };

export interface MailCatcher {
  /**
   * Where ERP containers send mail: where it listens, or, while it cannot listen yet (the
   * port taken, Docker restarting), where it will (its network's address and fixed port: a
   * deploy meanwhile still points the ERP at the catcher, whose mail waits in Odoo's queue,
   * and reaches no other server). Null while neither is known.
   */
  address(): { host: string; port: number } | null;
  /** Until it listens, or the error that stops it now (callers that need it: tests). */
  ready(): Promise<{ host: string; port: number }>;
  stop(): Promise<void>;
}

const RETRY_MS = 30_000;

export function startMailCatcher(deps: {
  docker: DockerClient;
  stateDir: string;
  settings: MailCatcherSettings;
  labels?: Readonly<Record<string, string>>;
  emit(event: EventInput): void;
  logger: Logger;
}): MailCatcher {
  const { logger } = deps;
  const server = createMailCatcherServer({
    stateDir: deps.stateDir,
    emit: deps.emit,
    warn: (message) => logger.warn({}, message),
  });
  server.on("error", (error: Error) => logger.warn({ error: String(error) }, "mail catcher error"));
  let listening: { host: string; port: number } | null = null;
  /** The network's address once known: with a fixed port, where it will listen. */
  let intended: { host: string; port: number } | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let waiting: ((a: { host: string; port: number }) => void)[] = [];

  async function listen(): Promise<void> {
    const host = await ensureMailNetwork(deps.docker, deps.settings.network, deps.labels ?? {});
    if (deps.settings.port !== 0) intended = { host, port: deps.settings.port };
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.server.once("error", onError);
      server.listen(deps.settings.port, host, () => {
        server.server.off("error", onError);
        resolve();
      });
    });
    const port = (server.server.address() as AddressInfo).port;
    listening = { host, port };
    logger.info({ host, port }, "mail catcher listening");
    for (const w of waiting) w(listening);
    waiting = [];
  }

  const attempt = () => {
    listen().catch((error: unknown) => {
      logger.warn({ error: String(error) }, `mail catcher not started; trying again in ${RETRY_MS / 1000} s`);
      if (!stopped) timer = setTimeout(attempt, RETRY_MS);
    });
  };
  attempt();

  return {
    address: () => listening ?? intended,
    ready: () => (listening ? Promise.resolve(listening) : new Promise((resolve) => waiting.push(resolve))),
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      listening = null;
    },
  };
}
