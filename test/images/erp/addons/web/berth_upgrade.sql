-- berth stand-in: web's neutralisation banner (web/views/neutralize_views.xml), inactive
-- until data/neutralize.sql activates it. Idempotent.
DO $$
DECLARE
    view_id int4;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ir_model_data WHERE module = 'web' AND name = 'neutralize_banner') THEN
        INSERT INTO ir_ui_view (name, key, type, mode, priority, active, arch_db)
        VALUES ('neutralize_banner', 'web.neutralize_banner', 'qweb', 'extension', 16, false,
                '{"en_US": "<t name=\"Neutralize banner\" t-name=\"web.neutralize_banner\"/>"}')
        RETURNING id INTO view_id;
        INSERT INTO ir_model_data (module, name, model, res_id, noupdate)
        VALUES ('web', 'neutralize_banner', 'ir.ui.view', view_id, false);
    END IF;
END $$;
