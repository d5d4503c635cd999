# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module payment (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: ['onboarding', 'portal'] (16.0: ['portal']); portal depends on mail; here the subset the stand-in ships.
{
    'name': 'Payment Engine',
    'version': '2.0',
    'depends': ['mail'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
