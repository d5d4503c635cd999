// The API-key limits of public spec section 8: per key, fixed 60-second windows, not
// configurable. (The platform API's limits live with the routes they guard.)
import type { KeyAccess } from "../api-keys/api-key-format.ts";

export const KEY_LIMITS: Record<KeyAccess, number> = { read_only: 120, full_access: 20 };
/** Webhook create/update/delete, counted in addition to the key's own limit. */
export const WEBHOOK_WRITE_LIMIT = 10;
