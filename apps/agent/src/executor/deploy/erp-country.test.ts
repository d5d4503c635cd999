// pytz.country_timezones, as Odoo's database manager reads it to give a new database's users the
// time zone of a country that has only one (odoo/service/db.py `_initialize_db`).
import { describe, expect, it } from "vitest";
import { countryTimezones } from "./erp-country.ts";

const ZONE_TAB = [
  "# tzdb timezone descriptions",
  "BE\t+5050+00420\tEurope/Brussels",
  "DE\t+5230+01322\tEurope/Berlin",
  "DE\t+4742+00841\tEurope/Busingen\tBusingen",
  "US\t+404251-0740023\tAmerica/New_York\tEastern (most areas)",
  "US\t+415100-0873900\tAmerica/Chicago\tCentral (most areas)",
  "",
].join("\n");

describe("countryTimezones", () => {
  it("lists a country's zones from zone.tab, skipping comments", () => {
    expect(countryTimezones(ZONE_TAB, "BE")).toEqual(["Europe/Brussels"]);
    expect(countryTimezones(ZONE_TAB, "DE")).toEqual(["Europe/Berlin", "Europe/Busingen"]);
    expect(countryTimezones(ZONE_TAB, "US")).toHaveLength(2);
    expect(countryTimezones(ZONE_TAB, "XX")).toEqual([]);
  });
});
