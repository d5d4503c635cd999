# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module iap (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: ['web', 'base_setup']; here the subset the stand-in ships.
{
    'name': 'In-App Purchases',
    'version': '1.1',
    'depends': ['web'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
