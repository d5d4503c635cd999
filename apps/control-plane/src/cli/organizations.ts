// With a session, the platform API lists projects and servers per organisation. The organisation
// is --org, or the person's only one; a person in several picks with --org.
import { ok } from "@berth/protocol/api-client";
import type { Context } from "./context.ts";
import { CliError, EXIT } from "./errors.ts";

type PlatformApi = ReturnType<Context["platform"]>;

export const ORG_OPTION = ["--org <id>", "the organisation, when you belong to several (with `berth login` by e-mail)"] as const;

/** The organisation a list or a create acts in. */
export async function organizationId(api: PlatformApi, org: string | undefined): Promise<string> {
  if (org) return org;
  const { data } = await ok(api.GET("/organizations"));
  if (data.length === 1) return data[0]!.id;
  if (data.length === 0) throw new CliError("You belong to no organisation yet.", EXIT.failed, "no_organization");
  const list = data.map((o) => `  ${o.id}  ${o.name}`).join("\n");
  throw new CliError(`You belong to several organisations: pass --org <id>, one of\n${list}`, EXIT.usage, "organization_required");
}

/** Where to look for an item by id: --org, else every organisation of the person. */
export async function organizationIds(api: PlatformApi, org: string | undefined): Promise<string[]> {
  if (org) return [org];
  return (await ok(api.GET("/organizations"))).data.map((o) => o.id);
}
