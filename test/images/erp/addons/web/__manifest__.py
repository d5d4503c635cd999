# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module web (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: ['base'] (auto_install: True in Odoo, not reproduced); here the subset the stand-in ships.
{
    'name': 'Web',
    'version': '1.0',
    'depends': ['base'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
