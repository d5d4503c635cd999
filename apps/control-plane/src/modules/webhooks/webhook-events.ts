// Event names a subscription may ask for (public spec 6). Both spellings of the two
// deployment events exist; a subscriber gets exactly the names it subscribed to.
export const WEBHOOK_EVENTS = [
  "deploy.completed",
  "deployment.completed",
  "deploy.failed",
  "deployment.failed",
  "environment.status_changed",
  "backup.failed",
  "backup.missed",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
