// Public entry of @berth/protocol: every agent <-> control-plane message, step id and
// signing rule, shared by both apps.
export * from "./steps.ts";
export * from "./versions.ts";
export * from "./fields.ts";
export * from "./canonical.ts";
export * from "./commands.ts";
export * from "./deploy-params.ts";
export * from "./module-tests.ts";
export * from "./data-params.ts";
export * from "./erp-versions.ts";
export * from "./events.ts";
export * from "./caught-mail.ts";
export * from "./messages.ts";
export * from "./envelope.ts";
export * from "./keys.ts";
export * from "./signing.ts";
export * from "./close-codes.ts";
export * from "./enrollment.ts";
export * from "./settings.ts";
export * from "./validation.ts";
export * from "./erp-backup.ts";
export * from "./psql-script.ts";
export * from "./pg-custom-archive.ts";
export * from "./pg-custom-archive-hazards.ts";
