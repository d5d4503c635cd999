// Where the platform API is mounted, for the absolute upload URLs the tus server writes
// (kept here so the migrations module needs no import of platform-api/, which imports it).
export const PLATFORM_PREFIX_PATH = "/api/v1";
