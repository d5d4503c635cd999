// Traefik dynamic configuration for one environment (file provider watching
// <stateDir>/proxy/): HTTPS on the environment's domain with a Let's Encrypt certificate,
// forwarded to the ERP container over the environment's network; /websocket goes to the
// gevent port when the ERP runs workers (Odoo serves websockets there only).

export interface TraefikRouteInput {
  environmentId: string;
  domain: string;
  /** Resolvable by Traefik on the environment's network. */
  containerName: string;
  workers: number;
}

const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export function renderTraefikConfig(input: TraefikRouteInput): string {
  // The protocol checks the domain too; it is checked here because it lands inside a rule.
  if (!DOMAIN.test(input.domain)) throw new Error(`"${input.domain}" is not a valid host name`);
  const name = `berth-${input.environmentId}`;
  const host = `Host(\`${input.domain}\`)`;
  const lines = [
    `# Written by the Berth agent for environment ${input.environmentId}; rewritten on every deploy.`,
    "http:",
    "  routers:",
    `    ${name}:`,
    `      rule: "${host}"`,
    "      entryPoints:",
    "        - websecure",
    `      service: ${name}`,
    "      tls:",
    "        certResolver: letsencrypt",
  ];
  if (input.workers > 0) {
    lines.push(
      `    ${name}-websocket:`,
      `      rule: "${host} && PathPrefix(\`/websocket\`)"`,
      "      entryPoints:",
      "        - websecure",
      `      service: ${name}-websocket`,
      "      tls:",
      "        certResolver: letsencrypt",
    );
  }
  lines.push(
    "  services:",
    `    ${name}:`,
    "      loadBalancer:",
    "        passHostHeader: true",
    "        servers:",
    `          - url: "http://${input.containerName}:8069"`,
  );
  if (input.workers > 0) {
    lines.push(
      `    ${name}-websocket:`,
      "      loadBalancer:",
      "        servers:",
      `          - url: "http://${input.containerName}:8072"`,
    );
  }
  return `${lines.join("\n")}\n`;
}
