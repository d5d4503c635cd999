// Plain dumps for bench:psql-script, as pg_dump writes them for an ERP database: the header
// (\restrict, SET lines), a schema (tables, sequences, a plpgsql trigger function with a
// dollar-quoted body, comments, ALTER ... OWNER TO), the rows of a partner and a message table,
// then constraints and indexes. "copy" writes the rows as COPY ... FROM stdin data (pg_dump's
// default), "insert" as one INSERT per row (pg_dump --inserts): quoted strings with doubled
// quotes, newlines and UTF-8 inside, jsonb translations, numbers, NULL, booleans.
// Deterministic: the same size gives the same bytes.

export type DumpKind = "copy" | "insert";

/** mulberry32: a small deterministic generator. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = "order delivery invoice customer payment Société Générale Müller straße café déjà vu quote it's partner stock move picking product warehouse".split(" ");
const TABLES = ["res_partner", "mail_message"] as const;

const HEADER = `--
-- PostgreSQL database dump
--

\\restrict benchKey42

-- Dumped from database version 16.4 (Debian 16.4-1.pgdg120+1)
-- Dumped by pg_dump version 16.10

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

`;

/** The schema part: `n` tables of the ERP's shape (about 1.5 kB each). */
function schema(n: number): string {
  const parts: string[] = [];
  for (let t = 0; t < n; t++) {
    const name = t < TABLES.length ? TABLES[t]! : `x_model_${t}`;
    parts.push(`--
-- Name: ${name}; Type: TABLE; Schema: public; Owner: odoo
--

CREATE TABLE public.${name} (
    id integer NOT NULL,
    name jsonb NOT NULL,
    email character varying,
    body text,
    active boolean,
    amount numeric,
    create_date timestamp without time zone,
    "Quoted Col" character varying(64) DEFAULT 'draft'::character varying
);


ALTER TABLE public.${name} OWNER TO odoo;

COMMENT ON TABLE public.${name} IS 'Model ${name}: it''s generated';

CREATE SEQUENCE public.${name}_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.${name}_id_seq OWNED BY public.${name}.id;

CREATE FUNCTION public.${name}_touch() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    /* keep the write date */
    NEW.create_date := now() AT TIME ZONE 'UTC';
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'name of % is required', NEW.id;
    END IF;
    RETURN NEW;
END;
$$;

`);
  }
  return parts.join("");
}

function constraints(n: number): string {
  const parts: string[] = [];
  for (let t = 0; t < n; t++) {
    const name = t < TABLES.length ? TABLES[t]! : `x_model_${t}`;
    parts.push(`ALTER TABLE ONLY public.${name}
    ADD CONSTRAINT ${name}_pkey PRIMARY KEY (id);

CREATE INDEX ${name}_name_idx ON public.${name} USING gin (((name ->> 'en_US'::text)) public.gin_trgm_ops);

SELECT pg_catalog.setval('public.${name}_id_seq', ${1000 + t}, true);

`);
  }
  return parts.join("");
}

interface Row {
  id: number;
  name: string;
  email: string | null;
  body: string;
  active: boolean;
  amount: string;
  date: string;
  state: string;
}

function row(rand: () => number, id: number): Row {
  const word = () => WORDS[Math.floor(rand() * WORDS.length)]!;
  const words = (n: number) => Array.from({ length: n }, word).join(" ");
  const lines = 1 + Math.floor(rand() * 3);
  return {
    id,
    name: `{"en_US": "${word()} ${id}", "fr_FR": "${word()} ${id}"}`,
    email: rand() < 0.2 ? null : `partner${id}@example.com`,
    body: Array.from({ length: lines }, () => `<p>${words(4 + Math.floor(rand() * 12))}</p>`).join("\n"),
    active: rand() < 0.9,
    amount: (rand() * 10000).toFixed(2),
    date: `2024-${String(1 + Math.floor(rand() * 12)).padStart(2, "0")}-${String(1 + Math.floor(rand() * 28)).padStart(2, "0")} 10:${String(Math.floor(rand() * 60)).padStart(2, "0")}:00`,
    state: rand() < 0.5 ? "draft" : "done",
  };
}

/** COPY's text format: backslash, tab and newline escaped. */
const copyField = (s: string | null) => (s === null ? "\\N" : s.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n"));
const sqlString = (s: string | null) => (s === null ? "NULL" : `'${s.replace(/'/g, "''")}'`);

function copyRow(r: Row): string {
  return `${r.id}\t${copyField(r.name)}\t${copyField(r.email)}\t${copyField(r.body)}\t${r.active ? "t" : "f"}\t${r.amount}\t${r.date}\t${r.state}\n`;
}

function insertRow(table: string, r: Row): string {
  return `INSERT INTO public.${table} VALUES (${r.id}, ${sqlString(r.name)}, ${sqlString(r.email)}, ${sqlString(r.body)}, ${r.active}, ${r.amount}, ${sqlString(r.date)}, ${sqlString(r.state)});\n`;
}

const COLUMNS = '(id, name, email, body, active, amount, create_date, "Quoted Col")';

/** A dump of about `bytes` bytes (the rows fill it up); deterministic for a given kind and size. */
export function generateDump(kind: DumpKind, bytes: number): Buffer {
  const rand = random(kind === "copy" ? 1 : 2);
  const tables = 400;
  const head = HEADER + schema(tables);
  const tail = `${constraints(tables)}--\n-- PostgreSQL database dump complete\n--\n\n\\unrestrict benchKey42\n\n`;
  const parts: Buffer[] = [Buffer.from(head)];
  let size = head.length + tail.length;
  let id = 1;
  for (let t = 0; size < bytes; t++) {
    const table = TABLES[t % TABLES.length]!;
    const rows: string[] = [kind === "copy" ? `\n--\n-- Data for Name: ${table}; Type: TABLE DATA; Schema: public; Owner: odoo\n--\n\nCOPY public.${table} ${COLUMNS} FROM stdin;\n` : `\n--\n-- Data for Name: ${table}; Type: TABLE DATA; Schema: public; Owner: odoo\n--\n\n`];
    for (let n = 0; n < 20_000; n++) rows.push(kind === "copy" ? copyRow(row(rand, id++)) : insertRow(table, row(rand, id++)));
    if (kind === "copy") rows.push("\\.\n\n");
    const block = Buffer.from(rows.join(""));
    parts.push(block);
    size += block.length;
  }
  parts.push(Buffer.from(tail));
  return Buffer.concat(parts);
}
