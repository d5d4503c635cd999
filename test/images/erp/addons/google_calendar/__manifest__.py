# -*- coding: utf-8 -*-
# berth stand-in of Odoo's standard module google_calendar (test/images/README.md, "Standard add-ons"):
# SQL only. Real depends: ['google_account', 'calendar'] (calendar depends on mail); here the subset the stand-in ships.
{
    'name': 'Google Calendar',
    'version': '1.0',
    'depends': ['mail'],
    'author': 'Odoo S.A.',
    'license': 'LGPL-3',
    'installable': True,
}
