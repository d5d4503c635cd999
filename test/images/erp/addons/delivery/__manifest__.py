# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module delivery (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: 16.0: ['sale_stock', 'sale_management']; 17.0+: ['sale'] (sale depends on payment, portal -> mail); here the subset the stand-in ships.
{
    'name': 'Delivery Costs',
    'version': '1.0',
    'depends': ['mail', 'payment'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
