-- Deploy insurance:personal_data to pg
-- Where personal data lives, declared once: insurance.personal_data names every column and JSON
-- path that holds some (its category, whose it is, its retention rule), insurance.retention_rules
-- says what each rule keeps and what ends it. The erasure and retention functions, the
-- documentation (docs/privacy.md) and the scan test all read these rows; a column holding an
-- e-mail that is not named here fails the scan.
-- insurance.pseudonymized_items records each risk item whose contract data was pseudonymized.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.retention_rules (
  rule        text PRIMARY KEY CHECK (rule ~ '^[a-z][a-z ]*$'),
  kept        text NOT NULL CHECK (kept <> ''),     -- how long, in a sentence
  on_erasure  text NOT NULL CHECK (on_erasure IN ('deleted', 'kept', 'pseudonymized at the end')),
  reason      text NOT NULL CHECK (reason <> '')    -- the duty or the need that keeps it
);
COMMENT ON TABLE insurance.retention_rules IS
  'The retention rules of personal data: how long each kind is kept, what an erasure request does to it, and why';

CREATE TABLE insurance.personal_data (
  relation    text NOT NULL CHECK (relation ~ '^[a-z_]+\.[a-z_]+$'),    -- schema.table
  column_name text NOT NULL CHECK (column_name ~ '^[a-z_]+$'),
  -- '' for the column itself; otherwise a JSON path with [*] for any array element
  json_path   text NOT NULL DEFAULT '' CHECK (json_path = '' OR json_path ~ '^\$(\.[A-Za-z_]+|\[\*\])+$'),
  category    text NOT NULL CHECK (category IN ('identity', 'contact', 'identifier', 'network address', 'free text')),
  subject     text NOT NULL CHECK (subject IN ('holder', 'beneficiary', 'insured', 'person', 'operator', 'client')),
  rule        text NOT NULL REFERENCES insurance.retention_rules,
  note        text NOT NULL CHECK (note <> ''),
  PRIMARY KEY (relation, column_name, json_path)
);
COMMENT ON TABLE insurance.personal_data IS
  'The map of personal data: every column and JSON path that holds some, with its category, whose it is and its '
  'retention rule; docs/privacy.md is generated from it and a scan test keeps it true';

-- SHARE ROW EXCLUSIVE on risk_items (the foreign key below): a new, empty table; held for a moment
CREATE TABLE insurance.pseudonymized_items (
  risk_item_id bigint PRIMARY KEY REFERENCES insurance.risk_items ON DELETE CASCADE,
  at           timestamptz NOT NULL DEFAULT now(),
  reason       text NOT NULL CHECK (reason IN ('retention ended', 'erasure after retention'))
);
COMMENT ON TABLE insurance.pseudonymized_items IS
  'Risk items whose contract data was pseudonymized (their people replaced by pseudonyms), when and why';
-- Each CHECK's sentence (read when a value is refused).
COMMENT ON CONSTRAINT retention_rules_rule_check ON insurance.retention_rules IS 'must be lower-case words';
COMMENT ON CONSTRAINT retention_rules_kept_check ON insurance.retention_rules IS 'must say how long it is kept';
COMMENT ON CONSTRAINT retention_rules_on_erasure_check ON insurance.retention_rules IS
  'must be deleted, kept or pseudonymized at the end';
COMMENT ON CONSTRAINT retention_rules_reason_check ON insurance.retention_rules IS 'must say why it is kept';
COMMENT ON CONSTRAINT personal_data_relation_check ON insurance.personal_data IS 'must be a schema.table name';
COMMENT ON CONSTRAINT personal_data_column_name_check ON insurance.personal_data IS 'must be a column name';
COMMENT ON CONSTRAINT personal_data_json_path_check ON insurance.personal_data IS
  'must be empty or a JSON path such as $.a.b or $.list[*].c';
COMMENT ON CONSTRAINT personal_data_category_check ON insurance.personal_data IS
  'must be identity, contact, identifier, network address or free text';
COMMENT ON CONSTRAINT personal_data_subject_check ON insurance.personal_data IS
  'must be holder, beneficiary, insured, person, operator or client';
COMMENT ON CONSTRAINT personal_data_note_check ON insurance.personal_data IS 'must say what it is';
COMMENT ON CONSTRAINT pseudonymized_items_reason_check ON insurance.pseudonymized_items IS
  'must be retention ended or erasure after retention';
ALTER TABLE insurance.retention_rules ENABLE ROW LEVEL SECURITY;   -- no policy: the owner's functions only
ALTER TABLE insurance.personal_data ENABLE ROW LEVEL SECURITY;
ALTER TABLE insurance.pseudonymized_items ENABLE ROW LEVEL SECURITY;

INSERT INTO insurance.retention_rules (rule, kept, on_erasure, reason) VALUES
  ('contract', 'while the policy is active, then POLICY_RETENTION (ten years by default) after it ends; '
               'then pseudonymized by the hourly retention job', 'pseudonymized at the end',
   'insurance law keeps contract data after a policy ends (claims, disputes, supervisors)'),
  ('login code', 'until the code expires, and one hour more (the per-e-mail hourly cap counts it)', 'deleted',
   'abuse limits of the holder''s login; no duty keeps it'),
  ('rate window', 'until the counting window ends (an hour)', 'deleted',
   'abuse limits; no duty keeps it'),
  ('operator login', 'until the session or the failed-login window ends', 'kept',
   'the security of the back-office; it names operators, not policy holders'),
  ('operator account', 'while the back-office user exists', 'kept',
   'who may use the back-office, and who did what (the audit log names them)'),
  ('delivery', 'a queued call''s body until it is delivered (then only its ids stay), the row OUTBOX_RETENTION '
               'after delivery', 'deleted',
   'delivery needs it until it is done'),
  ('provider answer', 'with the contract data of its policy', 'deleted',
   'troubleshooting an emission; the insurer keeps its own copy'),
  ('audit', 'as long as the audit log (append-only; its retention is a decision of the DBA)', 'kept',
   'accountability: who saw or changed whose data, including erasures themselves');

INSERT INTO insurance.personal_data (relation, column_name, json_path, category, subject, rule, note) VALUES
  ('insurance.risk_items', 'insured_subject', '$.name', 'identity', 'insured', 'contract', 'the insured person''s name, as the partner sent it'),
  ('insurance.risk_items', 'insured_subject', '$.email', 'contact', 'insured', 'contract', 'the insured person''s e-mail'),
  ('insurance.risk_items', 'insured_subject', '$.phone', 'contact', 'insured', 'contract', 'the insured person''s phone'),
  ('insurance.risk_items', 'insured_subject', '$.address', 'contact', 'insured', 'contract', 'the insured person''s postal address'),
  ('insurance.risk_items', 'insured_subject', '$.document', 'identifier', 'insured', 'contract', 'the insured person''s identity document number'),
  ('insurance.risk_items', 'insured_subject', '$.birthDate', 'identity', 'insured', 'contract', 'the insured person''s date of birth'),
  ('insurance.beneficiaries', 'name', '', 'identity', 'beneficiary', 'contract', 'a beneficiary''s (or the holder''s) name'),
  ('insurance.beneficiaries', 'email', '', 'contact', 'beneficiary', 'contract', 'a beneficiary''s e-mail; the holder''s is their login'),
  ('insurance.beneficiaries', 'document', '', 'identifier', 'beneficiary', 'contract', 'a beneficiary''s identity document number'),
  ('insurance.authorized_claimants', 'email', '', 'contact', 'holder', 'contract', 'which holder e-mail may read which item (mirrors the holder beneficiaries)'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.name', 'identity', 'insured', 'contract', 'the stored answer document: a copy of the item, kept by triggers'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.email', 'contact', 'insured', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.phone', 'contact', 'insured', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.address', 'contact', 'insured', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.document', 'identifier', 'insured', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.insured_subject.birthDate', 'identity', 'insured', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.beneficiaries[*].name', 'identity', 'beneficiary', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.beneficiaries[*].email', 'contact', 'beneficiary', 'contract', 'the stored answer document'),
  ('insurance.risk_item_documents', 'document', '$.beneficiaries[*].document', 'identifier', 'beneficiary', 'contract', 'the stored answer document'),
  ('insurance.postsales_otp', 'email', '', 'contact', 'holder', 'login code', 'who asked for a login code (the login history)'),
  ('insurance.postsales_otp', 'ip', '', 'network address', 'holder', 'login code', 'the address a login code was asked from'),
  ('insurance.client_ip_limits', 'ip', '', 'network address', 'client', 'rate window', 'hourly counters per client address'),
  ('insurance.dashboard_users', 'email', '', 'contact', 'operator', 'operator account', 'a back-office user''s login'),
  ('insurance.dashboard_sessions', 'ip', '', 'network address', 'operator', 'operator login', 'the address a back-office session began from'),
  ('insurance.dashboard_sessions', 'user_agent', '', 'free text', 'operator', 'operator login', 'the browser of a back-office session'),
  ('insurance.dashboard_login_failures', 'key', '', 'contact', 'operator', 'operator login', 'failed-login counters keyed by e-mail and address'),
  ('insurance.account_ceiling_trips', 'account', '', 'contact', 'person', 'login code', 'an account (holder or operator e-mail) whose failures tripped a ceiling'),
  ('insurance.audit_log', 'actor', '', 'contact', 'operator', 'audit', 'the operator who acted (dashboard:<e-mail>)'),
  ('insurance.audit_log', 'targets', '$[*]', 'contact', 'person', 'audit', 'whose data an operator saw, exported or erased (holders, beneficiaries), or which back-office user was changed'),
  ('insurance.integration_emissions', 'response', '', 'free text', 'person', 'provider answer', 'the insurer''s answer as received (may echo what it was sent)'),
  ('insurance.integration_emissions', 'error_history', '', 'free text', 'person', 'provider answer', 'the insurer''s error texts (may echo what it was sent)'),
  ('outbox.http_requests', 'body', '', 'free text', 'person', 'delivery', 'a queued call''s body: ids and states; only its ids stay after delivery'),
  ('outbox.http_requests', 'last_error', '', 'free text', 'person', 'delivery', 'the last delivery error (a receiver''s text)');

COMMIT;
