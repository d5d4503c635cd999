// An example body for every operation that takes one, per API, keyed like operation-ids.ts:
// what the explorers show and a generated client's documentation carries. openapi.ts puts
// each in its request body's media type; test/platform-api/request-examples.test.ts checks
// that every body has one and that each is valid against its operation's schema.
const PROJECT_ID = "4f1c2a9e-6b8d-4c3e-9a7f-2d5e8b1c0a64";
const ENVIRONMENT_ID = "8b2e4d6f-1a3c-4e5b-9d7f-6c8a0e2b4d19";
const SERVER_ID = "c3d5e7f9-2b4d-4f6a-8c0e-1a3b5c7d9e20";
const BACKUP_ID = "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b";

const deploy = { modules: { upgrade: ["sale_custom", "stock_custom"] } };
const addonCreate = { git_url: "https://github.com/OCA/web.git", branch: "17.0", name: "OCA web", sub_paths: ["web_responsive"], access: "public", auto_deploy: true };
const addonUpdate = { branch: "17.0", commit: "4b825dc642cb6eb9a060e54bf8d69288fbee4904" };
const variables = { variables: { PGTZ: "Europe/Brussels", SENTRY_DSN: "https://key@sentry.example.com/42" } };
const variable = { value: "Europe/Brussels" };
const backup = { comment: "Before the 17.0 upgrade" };
const restore = { backup_id: BACKUP_ID };
const copyFrom = { from_environment_id: ENVIRONMENT_ID, backup: "fresh" };
const schedule = { enabled: true, frequency: "daily", time: "02:30", retention: { daily: 7, weekly: 4, monthly: 6 } };
const webhook = { url: "https://hooks.example.com/berth", events: ["deployment.completed", "deployment.failed"] };
const project = { name: "Acme ERP", server_id: SERVER_ID, git_repo_url: "https://github.com/acme/erp-addons.git", default_branch: "main", erp_version: "17.0" };
const projectPatch = { name: "Acme ERP (production)", default_branch: "release" };
const environment = { name: "production", git_branch: "main", domain: "erp.example.com", cpu_cores: 2, ram_mb: 4096, disk_gb: 40, workers: 4 };
const environmentPatch = { domain: "erp.example.com", aliases: ["www.erp.example.com"] };

export const REQUEST_EXAMPLES = {
  public: {
    "POST /projects": project,
    "PATCH /projects/{id}": projectPatch,
    "POST /servers": { name: "web-1", provider: "hetzner", region: "fsn1" },
    "PATCH /environments/{id}": environmentPatch,
    "POST /environments": { project_id: PROJECT_ID, ...environment },
    "POST /environments/{id}/promote": { previous_stage: "staging" },
    "PUT /environments/{id}/variables": variables,
    "PUT /environments/{id}/variables/{name}": variable,
    "POST /environments/{id}/deploy": deploy,
    "POST /environments/{id}/actions/deploy": deploy,
    "POST /environments/{id}/redeploy": { modules: { upgrade: "changed" } },
    "POST /environments/{id}/actions/redeploy": { modules: { upgrade: "changed" } },
    "POST /environments/{id}/backups": backup,
    "POST /environments/{id}/restore": restore,
    "POST /environments/{id}/copy-from": copyFrom,
    "POST /webhooks": { ...webhook, project_id: PROJECT_ID },
    "PATCH /webhooks/{id}": { enabled: false },
    "PATCH /environments/{id}/backup-schedule": schedule,
    "POST /addon-repositories": addonCreate,
    "PATCH /addon-repositories/{addon_id}": addonUpdate,
    "POST /environments/{id}/addon-repositories": addonCreate,
    "PATCH /environments/{id}/addon-repositories/{addon_id}": addonUpdate,
  },
  platform: {
    "POST /auth/register": { email: "ada@example.com", name: "Ada Lovelace", password: "correct horse battery staple", organization_name: "Acme" },
    "POST /auth/login": { email: "ada@example.com", password: "correct horse battery staple" },
    "POST /organizations/{organization_id}/invitations": { email: "grace@example.com", role: "admin" },
    "POST /invitations/lookup": { token: "inv_3q2x7Yb0Kc9dLm4N" },
    "POST /invitations/accept": { token: "inv_3q2x7Yb0Kc9dLm4N" },
    "PUT /organizations/{organization_id}/members": { email: "grace@example.com", role: "member" },
    "PUT /projects/{project_id}/members/{user_id}": { role: "admin" },
    "POST /organizations/{organization_id}/api-keys": { name: "CI deploys", access: "full_access", project_id: PROJECT_ID },
    "POST /webhooks/{git_host}": {
      ref: "refs/heads/main",
      after: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
      repository: { clone_url: "https://github.com/acme/erp-addons.git" },
      commits: [{ id: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", message: "Fix the invoice report" }],
    },
    "POST /events/tickets": { organization_id: "5a7c9e1b-3d5f-4a6c-8e0b-2d4f6a8c0e13" },
    "POST /support/servers/{server_id}/commands": { type: "restart", environment_id: ENVIRONMENT_ID, reason: "Customer asked for a restart in ticket 4711" },
    "POST /deployments": { project_id: PROJECT_ID, environment_id: ENVIRONMENT_ID, git_branch: "main", ...deploy },
    "POST /environments/{environment_id}/deploy": { force: false, git_branch: "main" },
    "POST /projects/{project_id}/environments/{env_id}/deploy": deploy,
    "PATCH /projects/{project_id}/environments/{env_id}": { auto_deploy: true, git_branch: "main", ...environmentPatch },
    "POST /environments/{env_id}/promote": { previous_stage: "staging" },
    "POST /environments/{env_id}/backups": backup,
    "POST /environments/{env_id}/restore": restore,
    "POST /environments/{env_id}/copy-from": copyFrom,
    "POST /organizations/{organization_id}/servers": { name: "web-1" },
    "POST /organizations/{organization_id}/projects": project,
    "PATCH /projects/{project_id}": projectPatch,
    "POST /projects/{project_id}/environments": environment,
    "POST /organizations/{organization_id}/webhooks": webhook,
    "PUT /projects/{project_id}/environments/{env_id}/variables": variables,
    "PUT /projects/{project_id}/environments/{env_id}/variables/{name}": variable,
    "PATCH /environments/{env_id}/backup-schedule": schedule,
    "POST /platform/addon-repositories": addonCreate,
    "PATCH /platform/addon-repositories/{addon_id}": addonUpdate,
    "POST /organizations/{org_id}/addon-repositories": addonCreate,
    "PATCH /organizations/{org_id}/addon-repositories/{addon_id}": addonUpdate,
    "POST /projects/{project_id}/environments/{env_id}/addon-repositories": addonCreate,
    "PATCH /projects/{project_id}/environments/{env_id}/addon-repositories/{addon_id}": addonUpdate,
    "POST /migrations": {
      organization_id: "5a7c9e1b-3d5f-4a6c-8e0b-2d4f6a8c0e13",
      source_type: "vendor_paas",
      project_name: "Acme ERP",
      vendor_project_name: "acme-erp",
      git_repo_url: "https://github.com/acme/erp-addons.git",
      git_branch: "main",
      data_processing_consent: true,
    },
    "POST /migrations/{migration_id}/upload/parts": { part_numbers: [1, 2, 3] },
    "POST /migrations/{migration_id}/upload/complete": {
      parts: [
        { part_number: 1, etag: '"9b2cf535f27731c974343645a3985328"' },
        { part_number: 2, etag: '"6f5902ac237024bdd0c176cb93063dc4"' },
      ],
    },
    "POST /migrations/{migration_id}/import-url": {
      cloud_url: "https://backups.example.com/acme-2026-11-20.zip",
      sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      file_size: 734003200,
    },
    "POST /migrations/{migration_id}/configure": { target_vm_id: SERVER_ID, target_domain: "erp.example.com", production: false },
  },
} satisfies Record<"public" | "platform", Record<string, unknown>>;
