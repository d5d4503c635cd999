-- berth stand-in: delivery_carrier (delivery/models/delivery_carrier.py; the model stays in
-- delivery in 17.0+, stock_delivery only adds the stock side), a carrier of an external
-- provider in production mode and a fixed-price one. Idempotent.
CREATE TABLE IF NOT EXISTS delivery_carrier (
    id serial PRIMARY KEY,
    name jsonb NOT NULL,
    active boolean DEFAULT true,
    sequence int4 DEFAULT 10,
    delivery_type varchar NOT NULL DEFAULT 'fixed',
    integration_level varchar DEFAULT 'rate_and_ship',
    prod_environment boolean DEFAULT false,
    debug_logging boolean DEFAULT false,
    company_id int4,
    product_id int4,
    create_uid int4, create_date timestamp DEFAULT (now() AT TIME ZONE 'UTC'),
    write_uid int4, write_date timestamp DEFAULT (now() AT TIME ZONE 'UTC')
);
INSERT INTO delivery_carrier (name, delivery_type, prod_environment, active)
SELECT v.name::jsonb, v.delivery_type, v.prod, true
  FROM (VALUES ('{"en_US": "FedEx International"}', 'fedex', true), ('{"en_US": "Standard delivery"}', 'fixed', true))
       AS v (name, delivery_type, prod)
 WHERE NOT EXISTS (SELECT 1 FROM delivery_carrier c WHERE c.delivery_type = v.delivery_type);
