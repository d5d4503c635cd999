export { buildApp, type App, type AppOptions } from "./app.ts";
export { createServices, type Services } from "./services.ts";
export { manualClock, systemClock, type Clock } from "./lib/clock.ts";
export { createDemoOrganization, type DemoOrganization } from "./scripts/demo-data.ts";
export { createObjectStore, type ObjectStore, type ObjectStoreSettings } from "./lib/object-store/index.ts";
