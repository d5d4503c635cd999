// The ERP administrator's password, set in the database as the ERP stores it. Odoo keeps
// res_users.password as a passlib hash (CryptContext ['pbkdf2_sha512', 'plaintext'],
// 600,000 rounds since 16.0): "$pbkdf2-sha512$<rounds>$<salt>$<checksum>" with passlib's
// adapted base64 ('.' for '+', no padding). Writing that hash with SQL is what the ERP
// would write itself; the password never appears in SQL, a log or a process list.
import { pbkdf2, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import type { DockerClient } from "../../docker/docker-client.ts";
import { ERP_DB_NAME } from "../environment/environment-layout.ts";
import { psql } from "../environment/psql.ts";

const pbkdf2Async = promisify(pbkdf2);

/** Odoo's rounds for pbkdf2_sha512 (odoo/addons/base/models/res_users.py). */
export const ERP_PASSWORD_ROUNDS = 600_000;

/** Odoo's administrator: base.user_admin, id 2 in every database Odoo initialises. */
const ADMIN_USER_ID = 2;

function ab64(bytes: Buffer): string {
  return bytes.toString("base64").replace(/=+$/, "").replace(/\+/g, ".");
}

/** The passlib pbkdf2_sha512 hash of `password`, as Odoo writes it. */
export async function erpPasswordHash(password: string, rounds = ERP_PASSWORD_ROUNDS, salt = randomBytes(16)): Promise<string> {
  const checksum = await pbkdf2Async(password, salt, rounds, 64, "sha512");
  return `$pbkdf2-sha512$${String(rounds)}$${ab64(salt)}$${ab64(checksum)}`;
}

/**
 * Sets the administrator's password in the environment's database; returns its login, or
 * null when the database has no administrator (no res_users table, or no user 2).
 */
export async function setAdministratorPassword(docker: DockerClient, dbContainerId: string, password: string): Promise<string | null> {
  const hash = await erpPasswordHash(password);
  // Only [A-Za-z0-9./$] can be in it: safe as an SQL literal.
  if (!/^[A-Za-z0-9./$-]+$/.test(hash)) throw new Error("unexpected characters in a password hash");
  const [present] = await psql(docker, dbContainerId, "SELECT to_regclass('public.res_users') IS NOT NULL", { database: ERP_DB_NAME });
  if (present !== "t") return null;
  const rows = await psql(docker, dbContainerId, `UPDATE res_users SET password = '${hash}' WHERE id = ${String(ADMIN_USER_ID)} RETURNING login`, {
    database: ERP_DB_NAME,
  });
  return rows[0] ?? null;
}
