-- berth stand-in: what base's own data/neutralize.sql and the other standard modules' touch
-- of base's tables, with Odoo's table and column names (odoo/addons/base/models/ir_model.py,
-- ir_cron.py, ir_actions.py, ir_mail_server.py, ir_config_parameter.py, ir_ui_view.py,
-- res_users_settings.py), and rows a test can check. Run at each install and upgrade of
-- base (test/images/README.md): idempotent. res_users and ir_module_module are made by
-- odoo.c when it initialises the database. Columns Odoo fills through the ORM get defaults
-- here (Odoo's tables have none) so that plain INSERTs by tests keep working.
CREATE TABLE IF NOT EXISTS ir_model_data (
    id serial PRIMARY KEY,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    res_id int4,
    noupdate boolean DEFAULT false,
    name varchar NOT NULL,
    module varchar NOT NULL,
    model varchar NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ir_model_data_module_name_uniq_index ON ir_model_data (module, name);

-- ir.actions.server (its own table, ir_act_server; name is translatable: jsonb).
CREATE TABLE IF NOT EXISTS ir_act_server (
    id serial PRIMARY KEY,
    name jsonb NOT NULL,
    type varchar NOT NULL DEFAULT 'ir.actions.server',
    binding_type varchar NOT NULL DEFAULT 'action',
    usage varchar NOT NULL DEFAULT 'ir_actions_server',
    state varchar NOT NULL DEFAULT 'code',
    model_name varchar,
    code text,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);

-- ir.cron (ir_actions_server_id and user_id are required in Odoo; nullable here).
CREATE TABLE IF NOT EXISTS ir_cron (
    id serial PRIMARY KEY,
    ir_actions_server_id int4 REFERENCES ir_act_server (id) ON DELETE RESTRICT,
    cron_name varchar,
    user_id int4,
    active boolean DEFAULT true,
    interval_number int4 DEFAULT 1,
    interval_type varchar DEFAULT 'months',
    nextcall timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'),
    lastcall timestamp,
    priority int4 DEFAULT 5,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);

CREATE TABLE IF NOT EXISTS ir_mail_server (
    id serial PRIMARY KEY,
    name varchar NOT NULL,
    from_filter varchar,
    smtp_host varchar,
    smtp_port int4 NOT NULL DEFAULT 25,
    smtp_authentication varchar NOT NULL DEFAULT 'login',
    smtp_user varchar,
    smtp_pass varchar,
    smtp_encryption varchar NOT NULL DEFAULT 'none',
    smtp_ssl_certificate bytea,
    smtp_ssl_private_key bytea,
    smtp_debug boolean DEFAULT false,
    sequence int4 DEFAULT 10,
    active boolean DEFAULT true,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);

CREATE TABLE IF NOT EXISTS ir_config_parameter (
    id serial PRIMARY KEY,
    key varchar NOT NULL,
    value text NOT NULL,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    CONSTRAINT ir_config_parameter_key_uniq UNIQUE (key)
);

CREATE TABLE IF NOT EXISTS ir_ui_view (
    id serial PRIMARY KEY,
    name varchar NOT NULL,
    model varchar,
    key varchar,
    priority int4 NOT NULL DEFAULT 16,
    type varchar,
    arch_db jsonb,
    arch_fs varchar,
    inherit_id int4 REFERENCES ir_ui_view (id) ON DELETE CASCADE,
    mode varchar NOT NULL DEFAULT 'primary',
    active boolean DEFAULT true,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);

CREATE TABLE IF NOT EXISTS res_users_settings (
    id serial PRIMARY KEY,
    user_id int4 NOT NULL,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    CONSTRAINT res_users_settings_unique_user_id UNIQUE (user_id)
);

-- ir_config_parameter.py _default_parameters (set when base is installed).
INSERT INTO ir_config_parameter (key, value) VALUES
    ('database.secret', gen_random_uuid()::text),
    ('database.uuid', gen_random_uuid()::text),
    ('database.create_date', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')),
    ('web.base.url', 'http://localhost:8069'),
    ('base.login_cooldown_after', '10'),
    ('base.login_cooldown_duration', '60')
ON CONFLICT (key) DO NOTHING;

-- base's scheduled actions (base/data/ir_cron_data.xml): the autovacuum, which neutralize
-- keeps, and the portal users' deletion, which it turns off. A production mail server.
DO $$
DECLARE
    action_id int4;
    cron_id int4;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ir_model_data WHERE module = 'base' AND name = 'autovacuum_job') THEN
        INSERT INTO ir_act_server (name, state, model_name, code, usage)
        VALUES ('{"en_US": "Base: Auto-vacuum internal data"}', 'code', 'ir.autovacuum', 'model._run_vacuum_cleaner()', 'ir_cron')
        RETURNING id INTO action_id;
        INSERT INTO ir_cron (ir_actions_server_id, cron_name, user_id, active, interval_number, interval_type, priority)
        VALUES (action_id, 'Base: Auto-vacuum internal data', 1, true, 1, 'days', 5)
        RETURNING id INTO cron_id;
        INSERT INTO ir_model_data (module, name, model, res_id, noupdate) VALUES
            ('base', 'autovacuum_job_ir_actions_server', 'ir.actions.server', action_id, true),
            ('base', 'autovacuum_job', 'ir.cron', cron_id, true);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ir_model_data WHERE module = 'base' AND name = 'ir_cron_res_users_deletion') THEN
        INSERT INTO ir_act_server (name, state, model_name, code, usage)
        VALUES ('{"en_US": "Base: Portal Users Deletion"}', 'code', 'res.users.deletion', 'model._gc_portal_users()', 'ir_cron')
        RETURNING id INTO action_id;
        INSERT INTO ir_cron (ir_actions_server_id, cron_name, user_id, active, interval_number, interval_type, priority)
        VALUES (action_id, 'Base: Portal Users Deletion', 1, true, 1, 'days', 5)
        RETURNING id INTO cron_id;
        INSERT INTO ir_model_data (module, name, model, res_id, noupdate) VALUES
            ('base', 'ir_cron_res_users_deletion_ir_actions_server', 'ir.actions.server', action_id, true),
            ('base', 'ir_cron_res_users_deletion', 'ir.cron', cron_id, true);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ir_mail_server WHERE name = 'Production SMTP') THEN
        INSERT INTO ir_mail_server (name, smtp_host, smtp_port, smtp_authentication, smtp_user, smtp_pass, smtp_encryption, active)
        VALUES ('Production SMTP', 'smtp.customer.example', 587, 'login', 'erp@customer.example', 'smtp-secret', 'starttls', true);
    END IF;
END $$;

-- The company, its partner, countries and currencies, as much as Odoo's database manager uses
-- when it creates a database with a country (odoo/service/db.py `_initialize_db`: the main
-- company's country and currency, the users' time zone; res.users _inherits res.partner, so
-- a user's tz is its partner's; base/data/res_currency_data.xml, res_country_data.xml,
-- res_company_data.xml: the main company starts in USD). Rows only for a database without
-- partners (a new one), so a database that has its own keeps them as they are.
CREATE TABLE IF NOT EXISTS res_currency (
    id serial PRIMARY KEY,
    name varchar(3) NOT NULL UNIQUE,
    symbol varchar NOT NULL,
    active boolean DEFAULT true
);
CREATE TABLE IF NOT EXISTS res_country (
    id serial PRIMARY KEY,
    code varchar(2) UNIQUE,
    name jsonb NOT NULL,
    currency_id int4 REFERENCES res_currency (id)
);
CREATE TABLE IF NOT EXISTS res_partner (
    id serial PRIMARY KEY,
    name varchar,
    is_company boolean DEFAULT false,
    active boolean DEFAULT true
);
ALTER TABLE res_partner ADD COLUMN IF NOT EXISTS country_id int4, ADD COLUMN IF NOT EXISTS tz varchar;
ALTER TABLE res_users ADD COLUMN IF NOT EXISTS partner_id int4;
CREATE TABLE IF NOT EXISTS res_company (
    id serial PRIMARY KEY,
    name varchar NOT NULL,
    partner_id int4 NOT NULL,
    currency_id int4 NOT NULL
);
INSERT INTO res_currency (name, symbol) VALUES ('USD', '$'), ('EUR', '€'), ('CHF', 'CHF') ON CONFLICT (name) DO NOTHING;
INSERT INTO res_country (code, name, currency_id) VALUES
    ('US', '{"en_US": "United States"}', (SELECT id FROM res_currency WHERE name = 'USD')),
    ('BE', '{"en_US": "Belgium"}', (SELECT id FROM res_currency WHERE name = 'EUR')),
    ('FR', '{"en_US": "France"}', (SELECT id FROM res_currency WHERE name = 'EUR')),
    ('DE', '{"en_US": "Germany"}', (SELECT id FROM res_currency WHERE name = 'EUR')),
    ('CH', '{"en_US": "Switzerland"}', (SELECT id FROM res_currency WHERE name = 'CHF'))
ON CONFLICT (code) DO NOTHING;
DO $$
DECLARE
    company_partner int4;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM res_partner) THEN
        INSERT INTO res_partner (name, is_company) VALUES ('My Company', true) RETURNING id INTO company_partner;
        INSERT INTO res_company (name, partner_id, currency_id) VALUES ('My Company', company_partner, (SELECT id FROM res_currency WHERE name = 'USD'));
        INSERT INTO res_partner (name) VALUES ('Administrator');
        UPDATE res_users SET partner_id = (SELECT max(id) FROM res_partner) WHERE login = 'admin';
    END IF;
END $$;
