-- berth stand-in: iap_account (iap/models/iap_account.py) with a 32-character account token
-- (service_name as in 16.0; 17.0+ point to iap_service instead, not needed here). Idempotent.
CREATE TABLE IF NOT EXISTS iap_account (
    id serial PRIMARY KEY,
    service_name varchar,
    account_token varchar,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);
INSERT INTO iap_account (service_name, account_token)
SELECT 'sms', '0123456789abcdef0123456789abcdef'
 WHERE NOT EXISTS (SELECT 1 FROM iap_account WHERE service_name = 'sms');
