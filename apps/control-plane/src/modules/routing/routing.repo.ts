// The writes of proxy.state, inside the ingest transaction (routing-events.ts decides what):
// the server's proxy, and the routes of the environments that run on that server. Every
// statement is scoped to the server whose agent sent the report: an environment of another
// server is never written, whatever the report names.
import type pg from "pg";
import type { StoredProxy, StoredRouting } from "./routing-view.ts";

type Client = Pick<pg.PoolClient, "query">;

/** Stores the server's proxy; whether it changed other than its check time. */
export async function storeProxy(client: Client, serverId: string, proxy: StoredProxy): Promise<boolean> {
  const { rows } = await client.query<{ changed: boolean }>(
    `with old as (select proxy from servers where id = $1 for update),
          stored as (update servers set proxy = $2::jsonb where id = $1)
     select (select proxy from old) - 'checked_at' is distinct from $2::jsonb - 'checked_at' as changed`,
    [serverId, JSON.stringify(proxy)],
  );
  return rows[0]?.changed ?? false;
}

export interface RoutingChange {
  environment_id: string;
  project_id: string;
  routing: StoredRouting | null;
  /** Other than its check time. */
  changed: boolean;
}

/**
 * Sets the routing of every environment placed on the server (its own server, else its
 * project's): the report's route, or null for those the report leaves out (no route).
 * Routes naming an environment of any other server change nothing and are counted.
 */
export async function storeRoutes(client: Client, serverId: string, routes: { environment_id: string; routing: StoredRouting }[]): Promise<{ changes: RoutingChange[]; foreign: number }> {
  const placed = `select e.id, e.project_id, e.routing from environments e join projects p on p.id = e.project_id
                  where coalesce(e.server_id, p.server_id) = $1`;
  const { rows } = await client.query<RoutingChange & { old: unknown }>(
    `with route as (select (r->>'environment_id')::uuid as id, r->'routing' as routing from jsonb_array_elements($2::jsonb) r),
          mine as (select m.id, m.project_id, m.routing as old, route.routing as new
                   from (${placed} for update of e) m left join route on route.id = m.id
                   where m.routing is not null or route.id is not null),
          stored as (update environments e set routing = mine.new from mine where e.id = mine.id and e.routing is distinct from mine.new)
     select id as environment_id, project_id, new as routing, (old - 'checked_at') is distinct from (new - 'checked_at') as changed from mine`,
    [serverId, JSON.stringify(routes)],
  );
  const { rows: counted } = await client.query<{ n: number }>(
    `select count(*)::int as n from jsonb_array_elements($2::jsonb) r
     where not exists (select 1 from (${placed}) m where m.id = (r->>'environment_id')::uuid)`,
    [serverId, JSON.stringify(routes)],
  );
  return { changes: rows.map(({ old: _old, ...c }) => c), foreign: counted[0]?.n ?? 0 };
}
