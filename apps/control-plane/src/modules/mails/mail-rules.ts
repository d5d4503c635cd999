// Which environments' mail is caught, and how long and how much of it is kept: the one place
// these rules are named. The ingest trims an environment's box as mail arrives
// (caught-mails.ts); reads never show a message past its time, trimmed or not yet.
export const MAIL_RETENTION_DAYS = 7;
export const MAX_MAILS_PER_ENVIRONMENT = 1000;

/** Mail received before this instant is expired. */
export function mailExpiry(now: Date): Date {
  return new Date(now.getTime() - MAIL_RETENTION_DAYS * 24 * 3600 * 1000);
}

/** Staging and development ERPs send to the server's catcher; production sends as it is configured. */
export function catchesMail(stage: "production" | "staging" | "development"): boolean {
  return stage !== "production";
}
