// The main company's country on a new database, as Odoo's database manager sets it when it
// creates one with a country (odoo/service/db.py `_initialize_db`): the company's country
// (stored on its partner), the company's currency from the country's, and, when the country
// has exactly one time zone (pytz.country_timezones, read from the tz database's zone.tab),
// that time zone on every active user. Without the currency a Belgian company keeps USD; without
// the time zone every user works in UTC.
import { readFile } from "node:fs/promises";
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "../environment/psql.ts";
import { ERP_DB_NAME } from "../environment/environment-layout.ts";
import type { StepScope } from "../runner/step-runner.ts";

/** Where pytz's country_timezones comes from (Debian's pytz reads the system's tz database). */
export const ZONE_TAB = "/usr/share/zoneinfo/zone.tab";

/** The time zones zone.tab lists for a country code, in its order. */
export function countryTimezones(zoneTab: string, country: string): string[] {
  const zones: string[] = [];
  for (const line of zoneTab.split("\n")) {
    if (line.startsWith("#")) continue;
    const [code, , zone] = line.split("\t");
    if (code === country && zone !== undefined && zone !== "") zones.push(zone.trim());
  }
  return zones;
}

/** Sets the country (two letters), its currency and its single time zone; skipped, with a warning, when the ERP has no such tables. */
export async function applyCountry(docker: DockerClient, dbContainerId: string, countryCode: string, log: StepScope["log"], zoneTabPath = ZONE_TAB): Promise<void> {
  const country = countryCode.toUpperCase();
  if (!/^[A-Z]{2}$/.test(country)) throw new Error(`not a country code: ${countryCode}`);
  const query = (sql: string) => psql(docker, dbContainerId, sql, { database: ERP_DB_NAME });
  const [present] = await query("SELECT to_regclass('public.res_company') IS NOT NULL AND to_regclass('public.res_country') IS NOT NULL");
  if (present !== "t") {
    log("warning", `Country ${country} not set: the database has no res_company/res_country`);
    return;
  }
  const [found] = await query(`SELECT count(*) FROM res_country WHERE code = '${country}'`);
  if (found === "0") {
    log("warning", `Country ${country} not set: the ERP does not know that country`);
    return;
  }
  const zoneTab = await readFile(zoneTabPath, "utf8").catch(() => null);
  const zones = zoneTab === null ? [] : countryTimezones(zoneTab, country);
  const zone = zones.length === 1 ? zones[0] : undefined;
  const [currency = ""] = await query(
    `WITH c AS (SELECT id, currency_id FROM res_country WHERE code = '${country}'), co AS (SELECT id, partner_id FROM res_company ORDER BY id LIMIT 1),
     p AS (UPDATE res_partner SET country_id = (SELECT id FROM c) WHERE id = (SELECT partner_id FROM co) RETURNING id),
     m AS (UPDATE res_company SET currency_id = coalesce((SELECT currency_id FROM c), res_company.currency_id) WHERE id = (SELECT id FROM co) RETURNING currency_id)
     SELECT coalesce((SELECT name FROM res_currency WHERE id = (SELECT currency_id FROM m)), '')`,
  );
  // res.users inherits res.partner (_inherits): a user's tz is its partner's column.
  if (zone !== undefined && /^[A-Za-z0-9_+/-]+$/.test(zone)) await query(`UPDATE res_partner SET tz = '${zone}' WHERE id IN (SELECT partner_id FROM res_users WHERE active)`);
  log(
    "info",
    `Main company's country set to ${country}${currency ? `, its currency to ${currency}` : ""}` +
      (zone !== undefined ? `, the users' time zone to ${zone}` : zoneTab === null ? ` (time zone not set: ${zoneTabPath} is missing)` : ` (time zone not set: the country has ${zones.length})`),
  );
}
