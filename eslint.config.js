// One lint configuration for every workspace: typescript-eslint's recommended rules.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { TIERS } from "./test/tiers.ts";

const apiTier = TIERS.find((t) => t.name === "api");
const envWrite = "MemberExpression[object.object.name='process'][object.property.name='env']";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "**/.data/**", "packages/db/migrations/**", "test/lint/fixtures/**", "packages/protocol/src/api-client/generated/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
  {
    // Every outgoing HTTP request of the control plane goes through the SSRF guard (lib/outbound).
    // Not the berth CLI (src/cli): it runs on the user's machine and calls only the control plane
    // the user named (and the download links it hands out), so there is no server to forge requests from.
    files: ["apps/control-plane/src/**/*.ts"],
    ignores: ["apps/control-plane/src/lib/outbound/**", "apps/control-plane/src/cli/**"],
    rules: {
      "no-restricted-globals": ["error", { name: "fetch", message: "Send outgoing requests through lib/outbound/request-guard.ts (SSRF guard)." }],
      "no-restricted-imports": [
        "error",
        {
          paths: ["node:http", "node:https", "http", "https", "undici"].map((name) => ({
            name,
            message: "Send outgoing requests through lib/outbound/request-guard.ts (SSRF guard).",
          })),
        },
      ],
    },
  },
  {
    // The dashboard's browser modules: plain JavaScript served as is (no build step).
    files: ["apps/control-plane/src/dashboard/public/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: Object.fromEntries(
        ["window", "document", "sessionStorage", "fetch", "EventSource", "requestAnimationFrame", "cancelAnimationFrame", "IntersectionObserver",
          "URLSearchParams", "location", "history", "navigator", "getSelection", "confirm", "setTimeout", "clearTimeout", "setInterval",
          "clearInterval", "performance", "Node", "Element", "console",
          // Migration uploads: upload progress, resumable uploads kept across reloads, streamed hashing.
          "XMLHttpRequest", "FormData", "localStorage", "AbortController", "DOMException", "TextEncoder", "URL", "btoa"].map((name) => [name, "readonly"]),
      ),
    },
  },
  {
    // The API tier's files share one module graph per worker (test/tiers.ts, isolate): a setting
    // put in process.env would reach the next file's control plane. Give it to startControlPlane.
    files: apiTier.include,
    ignores: apiTier.exclude,
    rules: {
      "no-restricted-syntax": [
        "error",
        ...[`AssignmentExpression > ${envWrite}.left`, `UnaryExpression[operator='delete'] > ${envWrite}`].map((selector) => ({
          selector,
          message: "API-tier test files share a process: pass the setting to startControlPlane instead of process.env.",
        })),
      ],
    },
  },
);
