// This control plane's origin as the links it answers name it (backup downloads, migration
// upload URLs): one rule for every module that writes an absolute URL.
import type { FastifyRequest } from "fastify";
import { publicUrl } from "../config.ts";
import { installOrigin } from "../modules/agent-releases/install-origin.ts";

/** This control plane's origin as links should name it: BERTH_PUBLIC_URL, else the request's (https unless on this machine). */
export function originOf(request: Pick<FastifyRequest, "protocol" | "host">): string {
  return installOrigin(request, publicUrl());
}
