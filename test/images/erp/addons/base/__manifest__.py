# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module base (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: none (base is the root); here the subset the stand-in ships.
{
    'name': 'Base',
    'version': '1.3',
    'depends': [],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
