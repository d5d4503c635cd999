// Sample commands and keys shared by this package's tests; not part of the public API.
import type { UnsignedCommand } from "./commands.ts";
import { keyIdFor, privateKeyFromSeed, publicKeyOf } from "./keys.ts";

export const SERVER_ID = "6f1c2a4e-8d3b-4c7a-9e15-2b7d4f0a9c31";
export const OTHER_SERVER_ID = "0b8e5d2c-1f4a-4e6b-8c9d-7a3f2e1d0c5b";
export const NOW = new Date("2025-03-01T12:00:00.000Z");

export const controlPlaneKey = privateKeyFromSeed(new Uint8Array(32).fill(7));
export const controlPlanePublicKey = publicKeyOf(controlPlaneKey);
export const controlPlaneKeyId = keyIdFor(controlPlanePublicKey);
export const trustedKeys = new Map([[controlPlaneKeyId, controlPlanePublicKey]]);

export const agentKey = privateKeyFromSeed(new Uint8Array(32).fill(9));

export function unsignedDeploy(overrides: Partial<UnsignedCommand<"deploy">> = {}): UnsignedCommand<"deploy"> {
  return {
    command_id: "3c5e7a91-2b4d-4f6e-8a0c-1d3f5b7e9a20",
    server_id: SERVER_ID,
    seq: 1,
    type: "deploy",
    issued_at: "2025-03-01T11:59:30.000Z",
    expires_at: "2025-03-01T12:14:30.000Z",
    issued_by: "user_1",
    params: {
      deployment_id: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
      environment_id: "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b",
      erp_version: "17.0",
      image: "registry.example.com/erp:17.0",
      git: { url: "https://git.example.com/acme/addons.git", branch: "main", commit: null },
      resources: { cpu_cores: 2, ram_mb: 4096, disk_gb: 40, workers: 4 },
      domain: "erp.acme.example",
      env: { TZ: "UTC" },
    },
    ...overrides,
  };
}
