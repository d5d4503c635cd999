# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module mail (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: ['base', 'base_setup', 'bus', 'web_tour', ...]; here the subset the stand-in ships.
{
    'name': 'Discuss',
    'version': '1.15',
    'depends': ['base', 'web'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
