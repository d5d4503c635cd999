// ERP versions a project may name (platform spec 4.3; the table is the protocol's erp-versions.ts): only major.minor selects the image.
import { ERP_VERSIONS, type ErpVersion } from "@berth/protocol";
import { DomainError } from "../../lib/errors.ts";

export { ERP_VERSIONS, type ErpVersion } from "@berth/protocol";

/** "17.0.1.0", "saas~17.4" or "17.0+e-20250703" -> "17.0"-style major.minor, or null. */
export function majorMinor(version: string): string | null {
  const m = /^(?:saas~)?(\d+)\.(\d+)/.exec(version.trim());
  return m ? `${m[1]}.${m[2]}` : null;
}

export function assertSupportedErpVersion(version: string): ErpVersion {
  const mm = majorMinor(version);
  if (!mm || !(mm in ERP_VERSIONS)) {
    throw new DomainError(
      "unsupported_erp_version",
      `ERP version ${JSON.stringify(version)} is not supported; use one of ${Object.keys(ERP_VERSIONS).join(", ")}`,
    );
  }
  return mm as ErpVersion;
}
