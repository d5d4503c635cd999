// The two public-API reads bench:api and bench:api-cpu measure, with the path each request of
// a key's target takes.
import type { Target } from "./seed.ts";

const PREFIX = "/api/public/v1";

export type Route = "projects" | "task";
export const ROUTES: Record<Route, { label: string; path: (t: Target) => string }> = {
  projects: { label: "GET /projects", path: () => `${PREFIX}/projects` },
  task: { label: "GET /deployments/{id}", path: (t) => `${PREFIX}/deployments/${t.taskId}` },
};
