// Which installed modules are the vendor's own (standard) and which were added (custom).
//
// ERP-FACTS.md: author and license are unreliable, compare names with the official addons
// list. No official list could be generated here (no internet; the stored copies of
// odoo/odoo and odoo/enterprise cannot be listed folder by folder), so OFFICIAL_MODULES
// below is written by hand from the addons/ folders of odoo/odoo and odoo/enterprise
// 16.0–19.0, and is incomplete. To replace it, generate one name per line from
// `ls addons odoo/addons` of each branch of both repositories and swap this set (or pass
// your own to classifyModules). The rule, in order:
//   1. a name in the list is standard;
//   2. a name starting with `l10n_` is standard (the vendor ships some 300 localisations);
//   3. license OEEL-1 (the vendor's enterprise licence, which other authors do not use) is standard;
//   4. everything else is custom: a custom module wrongly counted standard would be missed
//      when the migration asks for its code, which is worse than the opposite mistake.

const NAMES = `
base web base_setup base_import base_automation base_iban base_vat base_address_extended base_geolocalize
base_sparse_field base_install_request base_gengo base_sms bus mail mail_bot mail_group mail_plugin auth_signup
auth_oauth auth_ldap auth_totp auth_totp_mail auth_totp_portal auth_password_policy auth_password_policy_portal
auth_password_policy_signup auth_passkey iap iap_mail iap_crm portal portal_rating rating resource resource_mail
uom product product_images product_expiry product_margin product_matrix product_email_template contacts calendar
calendar_sms calendar_ics digest phone_validation sms snailmail snailmail_account web_editor web_tour
web_unsplash web_hierarchy html_editor html_builder utm link_tracker social_media google_account google_calendar
google_gmail google_drive google_recaptcha google_spreadsheet microsoft_account microsoft_calendar microsoft_outlook
fetchmail fetchmail_gmail fetchmail_outlook barcodes barcodes_gs1_nomenclature board note privacy_lookup http_routing
account account_edi account_edi_ubl_cii account_payment account_check_printing account_debit_note account_fleet
account_qr_code_sepa account_qr_code_emv account_tax_python account_audit_trail account_peppol account_update_tax_tags
account_edi_proxy_client account_payment_term account_lock account_test analytic payment payment_demo payment_custom
payment_stripe payment_paypal payment_adyen payment_mollie payment_razorpay payment_xendit payment_aps payment_asiapay
payment_buckaroo payment_flutterwave payment_mercado_pago payment_authorize payment_ogone payment_sips payment_alipay
payment_payulatam payment_payumoney payment_paystack payment_worldline payment_nuvei payment_transfer
sale sale_management sale_stock sale_purchase sale_purchase_stock sale_project sale_timesheet sale_crm sale_margin
sale_mrp sale_expense sale_loyalty sale_pdf_quote_builder sale_product_configurator sale_product_matrix sale_service
sale_async_emails sale_sms sale_stock_margin sale_mrp_margin sale_loyalty_delivery sale_edi_ubl sale_gelato
crm crm_iap_enrich crm_iap_mine crm_livechat crm_sms crm_mail_plugin purchase purchase_stock purchase_requisition
purchase_requisition_stock purchase_product_matrix purchase_mrp purchase_edi_ubl_bis3 stock stock_account stock_delivery
stock_dropshipping stock_landed_costs stock_picking_batch stock_sms stock_fleet stock_barcode stock_accountant
delivery delivery_mondialrelay delivery_stock_picking_batch mrp mrp_account mrp_product_expiry mrp_repair mrp_subcontracting
mrp_subcontracting_account mrp_subcontracting_dropshipping mrp_subcontracting_purchase mrp_landed_costs repair
project project_account project_purchase project_timesheet_holidays project_todo project_mrp project_sms project_hr_expense
project_stock project_sale_expense hr_timesheet hr_timesheet_attendance timesheet_grid
hr hr_attendance hr_contract hr_expense hr_holidays hr_holidays_attendance hr_recruitment hr_recruitment_skills
hr_recruitment_survey hr_skills hr_skills_survey hr_skills_slides hr_org_chart hr_fleet hr_gamification hr_homeworking
hr_hourly_cost hr_livechat hr_maintenance hr_presence hr_work_entry hr_work_entry_contract hr_work_entry_holidays
hr_calendar hr_payroll hr_payroll_account hr_appraisal hr_referral hr_contract_salary hr_expense_extract
fleet maintenance lunch event event_booth event_booth_sale event_crm event_sale event_sms event_product
website_event website_event_sale website_event_track website_event_exhibitor website_event_booth website_event_crm
website website_sale website_sale_stock website_sale_wishlist website_sale_comparison website_sale_loyalty
website_sale_product_configurator website_sale_delivery website_sale_mondialrelay website_sale_autocomplete
website_sale_slides website_sale_collect website_crm website_crm_partner_assign website_crm_iap_reveal website_blog
website_forum website_slides website_slides_forum website_slides_survey website_livechat website_mail website_mail_group
website_hr_recruitment website_partner website_customer website_membership website_payment website_profile
website_sms website_links website_google_map website_event_meet website_event_track_quiz website_jitsi
website_project website_timesheet website_helpdesk website_appointment website_knowledge website_studio website_cf_turnstile
survey slides im_livechat mass_mailing mass_mailing_crm mass_mailing_sale mass_mailing_sms mass_mailing_event
mass_mailing_slides mass_mailing_themes marketing_automation social social_facebook social_linkedin social_twitter
social_instagram social_youtube social_push_notifications
point_of_sale pos_restaurant pos_loyalty pos_sale pos_hr pos_mrp pos_discount pos_epson_printer pos_self_order
pos_online_payment pos_adyen pos_stripe pos_mercado_pago pos_six pos_viva_wallet pos_razorpay pos_paytm pos_event
pos_sale_loyalty pos_restaurant_adyen pos_hr_restaurant pos_iot pos_preparation_display pos_enterprise
gamification hr_gamification spreadsheet spreadsheet_dashboard spreadsheet_account spreadsheet_edition
spreadsheet_dashboard_account spreadsheet_dashboard_crm spreadsheet_dashboard_sale spreadsheet_dashboard_stock_account
spreadsheet_dashboard_website_sale loyalty membership data_recycle certificate onboarding
web_enterprise web_studio web_gantt web_cohort web_map web_grid web_mobile web_dashboard web_cohort_enterprise
account_accountant account_reports account_followup account_asset account_budget account_consolidation account_invoice_extract
account_bank_statement_import account_bank_statement_import_csv account_bank_statement_import_ofx
account_bank_statement_import_qif account_bank_statement_import_camt account_online_synchronization
account_sepa account_sepa_direct_debit account_batch_payment account_3way_match account_intrastat account_winbooks_import
documents documents_account documents_hr documents_project documents_spreadsheet documents_sign knowledge sign
helpdesk helpdesk_timesheet helpdesk_sale helpdesk_stock helpdesk_repair helpdesk_fsm industry_fsm industry_fsm_sale
appointment appointment_crm appointment_hr planning quality quality_control quality_mrp mrp_plm mrp_workorder
mrp_maintenance voip approvals sale_subscription sale_renting rental iot social_demo marketing_card
whatsapp sms_twilio frontdesk room hr_payroll_holidays timer sale_amazon delivery_fedex delivery_ups delivery_dhl
delivery_usps delivery_bpost delivery_easypost delivery_sendcloud delivery_shiprocket delivery_starshipit
`;

/** Official module names known to this build (see the rule at the top of the file). */
export const OFFICIAL_MODULES: ReadonlySet<string> = new Set(NAMES.split(/\s+/).filter(Boolean));

/** Sorts installed modules (name → license) into standard and custom, both sorted by name. */
export function classifyModules(
  installed: ReadonlyMap<string, string | null>,
  official: ReadonlySet<string> = OFFICIAL_MODULES,
): { standard: string[]; custom: string[] } {
  const standard: string[] = [];
  const custom: string[] = [];
  for (const [name, license] of installed) {
    const isStandard = official.has(name) || name.startsWith("l10n_") || license === "OEEL-1";
    (isStandard ? standard : custom).push(name);
  }
  return { standard: standard.sort(), custom: custom.sort() };
}
