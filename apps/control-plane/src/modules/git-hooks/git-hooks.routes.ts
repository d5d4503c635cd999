// Platform API: the inbound git push hook (anonymous for sessions, authenticated by the
// per-project secret) and the route that creates or rotates that secret.
//
// Authentication per host (all compared in constant time):
// - github: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>
// - gitea:  X-Gitea-Signature: <hex> (sha256=<hex> accepted too)
// - gitlab: X-Gitlab-Token: <the secret> (GitLab's own scheme: it sends the secret, it does
//   not sign), or X-Gitlab-Signature: [sha256=]<hex HMAC> when present.
// No credential, or one that verifies with no project using the pushed repository: 401.
// Events other than push (ping, tag pushes, branch deletions) are verified and then answered
// 202 with `ignored` set, so a host's "test delivery" shows success without deploying.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { DomainError } from "../../lib/errors.ts";
import { errors, Nullable, StringEnum, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import type { RateLimiter } from "../rate-limits/rate-limiter.ts";
import type { GitHooks } from "./git-hooks.service.ts";
import { personOf } from "../auth/session-principal.ts";
import { emptyOutcome } from "./git-hooks.service.ts";
import { LIMIT_TRIGGER } from "./push-environments.ts";
import { GIT_HOSTS, hasCredential, HOOK_HEADERS, parsePush, type GitHost } from "./git-payload.ts";

export const GIT_HOOK_RATE_LIMIT = 30;
/**
 * Hook requests per minute from one address, counted before the body is parsed (up to 10 MiB
 * each, before the signature can be checked). High, since one Git host sends every project's
 * hooks from a few addresses; it bounds what one sender without a secret can make us parse.
 */
export const GIT_HOOK_ADDRESS_LIMIT = 600;
const HOOK_BODY_LIMIT = 10 * 1024 * 1024;

const HookResponse = Type.Object(
  {
    git_host: StringEnum(GIT_HOSTS),
    event: Type.String({ description: "The event-type header as sent" }),
    delivery_id: Type.String(),
    branch: Nullable(Type.String()),
    commit: Nullable(Type.String({ description: "The pushed head commit" })),
    ignored: Nullable(Type.String({ description: "Why nothing was deployed (not a push, not a branch, branch deleted); null otherwise" })),
    deliveries: Type.Array(
      Type.Object({
        project_id: Uuid,
        duplicate: Type.Boolean({ description: "This delivery id was handled before: nothing new was started; deployments lists what the first delivery started" }),
        received_at: Timestamp,
      }),
    ),
    deployments: Type.Array(
      Type.Object({
        project_id: Uuid,
        environment_id: Uuid,
        deployment_id: Uuid,
        reason: StringEnum(["branch", "addon"] as const, { description: "branch: the environment follows the pushed branch; addon: one of its addon repositories does" }),
        addon: Nullable(Type.String()),
      }),
    ),
    skipped: Type.Array(
      Type.Object({
        project_id: Uuid,
        environment_id: Nullable(Type.String({ format: "uuid", description: "null: the development environment the push would have made for its branch, which was not made" })),
        reason: StringEnum(["deployment_in_progress", "not_found", LIMIT_TRIGGER, "environment_not_created"] as const, {
          description:
            "deployment_in_progress: the environment was busy; not_found: it is gone; development_limit: the project runs its development_limit of development " +
            "environments and none is idle to stop; environment_not_created: the environment was refused (the message says why)",
        }),
        message: Type.String(),
      }),
    ),
    created_environments: Type.Array(
      Type.Object({ project_id: Uuid, environment_id: Uuid, name: Type.String() }),
      {
        description:
          "Development environments made for the pushed branch, which had no environment in the project (the project's development_server_id is set); " +
          "each is also under deployments",
      },
    ),
    stopped: Type.Array(
      Type.Object({ project_id: Uuid, environment_id: Uuid, deployment_id: Uuid, reason: Type.Literal(LIMIT_TRIGGER) }),
      { description: "Idle development environments stopped (a stop operation, trigger development_limit; never destroyed) to keep the project within its development_limit" },
    ),
  },
  { title: "GitHookResult" },
);

const PushBody = Type.Object(
  {
    ref: Type.Optional(Type.String()),
    after: Type.Optional(Type.String()),
    checkout_sha: Type.Optional(Nullable(Type.String())),
    repository: Type.Optional(Type.Object({}, { additionalProperties: true })),
    project: Type.Optional(Type.Object({}, { additionalProperties: true })),
    commits: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  },
  { additionalProperties: true, description: "The Git host's push payload as JSON (GitHub: content type application/json)" },
);

const unsigned = (host: GitHost) =>
  new DomainError("signature_missing", `Unsigned hook: send ${host === "gitlab" ? "X-Gitlab-Token (or X-Gitlab-Signature)" : HOOK_HEADERS[host].signature} made with the project's hook secret`);

export function gitHooksRoutes(deps: { gitHooks: GitHooks; access: Pick<Access, "requireProject">; limits: RateLimiter }): FastifyPluginAsyncTypebox {
  const { gitHooks, access, limits } = deps;
  return async (app) => {
    // The HMAC is over the exact bytes received: this scope keeps them and parses JSON itself.
    const rawBodies = new WeakMap<FastifyRequest, Buffer>();
    app.removeContentTypeParser("application/json");
    app.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit: HOOK_BODY_LIMIT }, (req, body, done) => {
      const raw = body as Buffer;
      rawBodies.set(req, raw);
      try {
        done(null, JSON.parse(raw.toString("utf8")) as unknown);
      } catch {
        done(new DomainError("invalid_json", "The body is not valid JSON"), undefined);
      }
    });

    app.post(
      "/webhooks/:git_host",
      {
        config: { anonymous: true },
        bodyLimit: HOOK_BODY_LIMIT,
        // Before a byte of the body is parsed: a request with no signature header at all is
        // refused, and one address may send only so many (parsing up to 10 MiB is the cost).
        onRequest: async (request) => {
          const host = (request.params as { git_host?: string }).git_host;
          if (!(GIT_HOSTS as readonly string[]).includes(host ?? "")) return; // the params schema answers it
          if (!hasCredential(host as GitHost, request.headers as Record<string, string | string[] | undefined>)) throw unsigned(host as GitHost);
          await limits.take({ bucket: `git_hook_address:${request.ip}`, limit: GIT_HOOK_ADDRESS_LIMIT, what: "git hook requests per address" });
        },
        schema: {
          tags: ["Git hooks"],
          summary: "Inbound git push hook",
          security: [], // no session: the HMAC signature authenticates it
          description:
            "Point your Git host's push webhook here (content type application/json) with the project's hook secret. " +
            "GitHub: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>. Gitea: X-Gitea-Signature: <hex>. " +
            "GitLab: X-Gitlab-Token: <secret> (or X-Gitlab-Signature: sha256=<hex>). Also required: the event header " +
            "(X-GitHub-Event / X-Gitlab-Event / X-Gitea-Event) and the delivery id (X-GitHub-Delivery / X-Gitlab-Event-UUID / X-Gitea-Delivery). " +
            "Every active environment with auto_deploy on the pushed branch, and every environment with an active auto-deploy addon " +
            "repository on it, gets a git_push deployment; a busy environment is listed under skipped. A push of the project's own repository to a branch " +
            "that has no environment in the project creates a development environment for it on the project's development_server_id, when set (created_environments), " +
            "stopping the oldest idle development environment when the project runs its development_limit (stopped). A delivery id is handled once. " +
            `At most ${GIT_HOOK_RATE_LIMIT} deliveries per minute per project, and ${GIT_HOOK_ADDRESS_LIMIT} requests per minute from one address ` +
            "(counted, like the signature header's presence, before the body is parsed).",
          params: Type.Object({ git_host: StringEnum(GIT_HOSTS) }),
          body: PushBody,
          response: { 200: HookResponse, 202: HookResponse, ...errors() },
        },
      },
      async (request, reply) => {
        const host = request.params.git_host as GitHost;
        const h = HOOK_HEADERS[host];
        const headers = request.headers as Record<string, string | string[] | undefined>;
        const raw = rawBodies.get(request);
        if (!raw) throw new DomainError("unsupported_media_type", "Send the hook as application/json");
        const push = parsePush(host, request.body);
        const verified = gitHooks.verified(await gitHooks.candidates(push), host, headers, raw);
        if (verified.length === 0) {
          throw new DomainError("signature_invalid", "The signature does not match the hook secret of any project using this repository");
        }
        for (const c of verified) await limits.take({ bucket: `git_hook:${c.projectId}`, limit: GIT_HOOK_RATE_LIMIT, what: "git hook deliveries per project" });

        const deliveryId = headers[h.delivery];
        if (typeof deliveryId !== "string" || deliveryId.length === 0 || deliveryId.length > 200) {
          throw new DomainError("delivery_id_missing", `Send the delivery id header ${h.delivery}`);
        }
        const event = typeof headers[h.event] === "string" ? (headers[h.event] as string) : "";
        const base = { git_host: host, event, delivery_id: deliveryId, branch: push.branch, commit: push.commit };
        const none = emptyOutcome();
        const ignored =
          event.toLowerCase() !== h.pushEvent
            ? `The event ${event || "(none)"} is not a push`
            : push.branch === null
              ? "The push is not to a branch"
              : push.deleted
                ? "The push deleted the branch"
                : null;
        if (ignored) return reply.code(202).send({ ...base, ignored, ...none });

        const outcome = await gitHooks.handle(host, deliveryId, { ...push, branch: push.branch! }, verified);
        const allDuplicates = outcome.deliveries.every((d) => d.duplicate);
        return reply.code(allDuplicates ? 200 : 202).send({ ...base, ignored: null, ...outcome });
      },
    );

    app.post(
      "/projects/:project_id/git-hook-secret",
      {
        schema: {
          tags: ["Git hooks"],
          summary: "Create or rotate the project's git hook secret",
          description:
            "Returns a new secret once (it cannot be read again); the previous secret stops working. " +
            "Needs permission project.environments.update.",
          params: Type.Object({ project_id: Uuid }),
          response: {
            201: Type.Object({
              project_id: Uuid,
              secret: Type.String({ description: "Shown only in this response" }),
              urls: Type.Object({ github: Type.String(), gitlab: Type.String(), gitea: Type.String() }),
            }),
            ...errors(404),
          },
        },
      },
      async (request, reply) => {
        const { project_id } = request.params;
        await access.requireProject(personOf(request), project_id, "project.environments.update");
        const secret = await gitHooks.rotateSecret(project_id);
        const base = `${request.protocol}://${request.host}${request.url.slice(0, request.url.indexOf("/projects/"))}/webhooks`;
        return reply.code(201).send({ project_id, secret, urls: { github: `${base}/github`, gitlab: `${base}/gitlab`, gitea: `${base}/gitea` } });
      },
    );
  };
}
