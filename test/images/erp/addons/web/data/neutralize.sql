-- from odoo/odoo 17.0:addons/web/data/neutralize.sql (stored copy at commit 1259afbe; the same in 16.0-19.0)
-- activate neutralization watermarks
UPDATE ir_ui_view
   SET active = true
 WHERE key = 'web.neutralize_banner';
