-- berth stand-in: payment_provider (payment/models/payment_provider.py: state is 'disabled',
-- 'enabled' or 'test'), with a live provider and a test one. Idempotent.
CREATE TABLE IF NOT EXISTS payment_provider (
    id serial PRIMARY KEY,
    name jsonb NOT NULL,
    code varchar NOT NULL DEFAULT 'none',
    state varchar NOT NULL DEFAULT 'disabled',
    is_published boolean DEFAULT false,
    company_id int4,
    sequence int4 DEFAULT 10,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);
INSERT INTO payment_provider (name, code, state, is_published)
SELECT v.name::jsonb, v.code, v.state, v.published
  FROM (VALUES ('{"en_US": "Stripe"}', 'stripe', 'enabled', true), ('{"en_US": "Demo"}', 'demo', 'test', false))
       AS v (name, code, state, published)
 WHERE NOT EXISTS (SELECT 1 FROM payment_provider p WHERE p.code = v.code);
