// Every setting of the control plane (and of its npm scripts), each declared in this folder and
// parsed nowhere else: name, former names, default, description, secrecy and parser. They are
// declared one file per concern (*-settings.ts) and put together here; config.ts groups them for
// their callers; `npm run docs:settings` writes docs/settings.md and .env.example from this
// list, in this order (each group's, then each setting's within it).
import { setting } from "@berth/protocol";
import { REPLICA_SETTINGS } from "./replica-settings.ts";
import { RETENTION_SETTINGS } from "./retention-settings.ts";
import { ROUTING_SETTINGS } from "./routing-settings.ts";
import { SERVICE_SETTINGS } from "./service-settings.ts";
import { STORAGE_SETTINGS } from "./storage-settings.ts";

export { LOG_LEVELS, REGISTRATION_MODES, type LogLevel, type RegistrationMode } from "./service-settings.ts";

export const CONTROL_PLANE_SETTINGS = {
  ...SERVICE_SETTINGS,
  ...REPLICA_SETTINGS,
  ...ROUTING_SETTINGS,
  ...STORAGE_SETTINGS,
  ...RETENTION_SETTINGS,
  // The npm scripts' own.
  adminPassword: setting({
    name: "BERTH_ADMIN_PASSWORD",
    defaultText: "read from stdin",
    secret: true,
    keepSpaces: true,
    description: "`npm run admin:create` only: the new account's password",
    parse: (raw) => raw,
  }),
  seedDemoUrl: setting({
    name: "BERTH_URL",
    defaultText: "`http://<BERTH_HOST>:<BERTH_PORT>`",
    description: "`npm run seed:demo` only: the control plane's URL in the links it prints",
    parse: (raw) => raw.replace(/\/$/, ""),
  }),
} as const;

export type ControlPlaneSettingKey = keyof typeof CONTROL_PLANE_SETTINGS;
