-- Rate-limit counters are disposable (a crash at worst resets a 60-second window), and
-- writing them through the WAL with an fsync on every API request was the largest cost
-- of an authenticated GET (see bench:api). Unlogged tables skip the WAL.
ALTER TABLE "rate_limit_counters" SET UNLOGGED;
