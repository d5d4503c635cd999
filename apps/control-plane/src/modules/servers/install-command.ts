// The install command shown with a fresh enrolment token (public API and dashboard): the
// control plane's URL as install-origin.ts allows it, and the release-signing key.
import { publicUrl } from "../../config.ts";
import { DomainError } from "../../lib/errors.ts";
import { installCommand, installOrigin, InstallOriginError } from "../agent-releases/index.ts";

export function installCommandFor(request: { protocol: string; host: string }, token: string, key: string): string {
  try {
    return installCommand(installOrigin(request, publicUrl()), token, key);
  } catch (error) {
    if (error instanceof InstallOriginError) throw new DomainError("invalid_host", error.message);
    throw error;
  }
}
