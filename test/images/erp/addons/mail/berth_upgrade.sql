-- berth stand-in: mail's tables that its data/neutralize.sql touches (mail/models/
-- mail_template.py, fetchmail.py: fetchmail is part of mail since 16.0), with a template
-- sending through base's production mail server and an active incoming server. Idempotent.
CREATE TABLE IF NOT EXISTS fetchmail_server (
    id serial PRIMARY KEY,
    name varchar NOT NULL,
    active boolean DEFAULT true,
    state varchar DEFAULT 'draft',
    server varchar,
    port int4,
    server_type varchar NOT NULL DEFAULT 'imap',
    is_ssl boolean DEFAULT false,
    "user" varchar,
    password varchar,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);
CREATE TABLE IF NOT EXISTS mail_template (
    id serial PRIMARY KEY,
    name jsonb,
    model varchar,
    subject jsonb,
    email_from varchar,
    mail_server_id int4 REFERENCES ir_mail_server (id) ON DELETE SET NULL,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);
INSERT INTO fetchmail_server (name, active, state, server, port, server_type, is_ssl, "user", password)
SELECT 'Support mailbox', true, 'done', 'imap.customer.example', 993, 'imap', true, 'support@customer.example', 'imap-secret'
 WHERE NOT EXISTS (SELECT 1 FROM fetchmail_server WHERE name = 'Support mailbox');
INSERT INTO mail_template (name, model, subject, mail_server_id)
SELECT '{"en_US": "Sales: Send Quotation"}', 'sale.order', '{"en_US": "Quotation {{ object.name }}"}',
       (SELECT id FROM ir_mail_server WHERE name = 'Production SMTP' ORDER BY id LIMIT 1)
 WHERE NOT EXISTS (SELECT 1 FROM mail_template WHERE name->>'en_US' = 'Sales: Send Quotation');
