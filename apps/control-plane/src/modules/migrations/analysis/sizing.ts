// The server a migrated ERP needs and what it costs, from ERP-FACTS.md's sizing rules (the
// vendor's deployment guide) and price constants that an operator can override.

/** Prices used for the cost comparison, per month, in the platform's currency. */
export interface CostSettings {
  /** What one vCPU of a customer's own server costs. */
  pricePerVcpu: number;
  /** What one GB of RAM costs. */
  pricePerGbRam: number;
  /** What one GB of disk costs. */
  pricePerGbDisk: number;
  /** The vendor's hosted price per internal user (its standard plan: no custom modules). */
  vendorPricePerUserStandard: number;
  /** The vendor's price per internal user when custom modules need its custom plan. */
  vendorPricePerUserCustom: number;
}

/**
 * Defaults: a typical VPS's price per resource, and the vendor's list prices per user and
 * month of its standard and custom plans (yearly billing, 2025). Replace them in settings.
 */
export const DEFAULT_COST_SETTINGS: CostSettings = {
  pricePerVcpu: 6,
  pricePerGbRam: 3,
  pricePerGbDisk: 0.1,
  vendorPricePerUserStandard: 24.9,
  vendorPricePerUserCustom: 37.4,
};

/** One worker serves about this many concurrent users (ERP-FACTS.md). */
export const USERS_PER_WORKER = 6;
/** RAM per worker: 80 % light requests (150 MB) and 20 % heavy ones (1 GB). */
export const RAM_PER_WORKER_MB = 0.8 * 150 + 0.2 * 1024;
/** PostgreSQL beside the ERP on the same server. */
export const POSTGRES_RAM_MB = 512;
/** Restoring keeps the old database until the new one is verified; indexes grow the dump. */
export const DATABASE_DISK_FACTOR = 2;
export const DISK_HEADROOM = 1.5;
/** Images, logs and the operating system. */
export const BASE_DISK_GB = 10;

export interface Recommendation {
  recommended_cpu: number;
  recommended_ram_mb: number;
  recommended_disk_gb: number;
  estimated_monthly_cost: number;
  vendor_equivalent_cost: number;
  monthly_savings: number;
}

const cents = (n: number) => Math.round(n * 100) / 100;

/**
 * CPU from workers (workers = 2 × CPU + 1, one worker per 6 users, at least 2 HTTP workers),
 * RAM from the workers plus PostgreSQL (rounded up to 256 MB), disk from database and file
 * store with headroom, and the monthly cost against the vendor's per-user price.
 */
export function recommend(
  input: { internalUsers: number; databaseBytes: number; filestoreBytes: number; hasCustomModules: boolean },
  prices: CostSettings = DEFAULT_COST_SETTINGS,
): Recommendation {
  const users = Math.max(1, input.internalUsers);
  const httpWorkers = Math.max(2, Math.ceil(users / USERS_PER_WORKER));
  const cpu = Math.max(1, Math.ceil((httpWorkers - 1) / 2));
  const workers = 2 * cpu + 1;
  const ramMb = Math.ceil((workers * RAM_PER_WORKER_MB + POSTGRES_RAM_MB) / 256) * 256;
  const gb = 1024 ** 3;
  const diskGb = Math.ceil(BASE_DISK_GB + ((input.databaseBytes * DATABASE_DISK_FACTOR + input.filestoreBytes) / gb) * DISK_HEADROOM);
  const estimated = cpu * prices.pricePerVcpu + (ramMb / 1024) * prices.pricePerGbRam + diskGb * prices.pricePerGbDisk;
  const perUser = input.hasCustomModules ? prices.vendorPricePerUserCustom : prices.vendorPricePerUserStandard;
  const vendor = users * perUser;
  return {
    recommended_cpu: cpu,
    recommended_ram_mb: ramMb,
    recommended_disk_gb: diskGb,
    estimated_monthly_cost: cents(estimated),
    vendor_equivalent_cost: cents(vendor),
    monthly_savings: cents(vendor - estimated),
  };
}
