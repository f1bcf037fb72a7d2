-- Deploy insurance:beneficiaries to pg
-- requires: risk_items
-- requires: email_address
-- Beneficiaries of a risk item; those with is_holder = true may log in to post-sales
-- (their e-mails are mirrored into authorized_claimants by claimant_rls).
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.beneficiaries (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  risk_item_id bigint NOT NULL REFERENCES insurance.risk_items ON DELETE CASCADE,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- text checked by the domain's rule (NULL passes) rather than the domain type itself: the
  -- claimant policies, the mirror trigger and the gateway view compare it with text.
  email        text CONSTRAINT beneficiaries_email_check CHECK (email::insurance.email = email),
  document     text CHECK (length(document) <= 64),
  relationship text CHECK (length(relationship) <= 64),
  is_holder    boolean NOT NULL DEFAULT false,
  share        numeric(5, 2) NOT NULL DEFAULT 0 CHECK (share BETWEEN 0 AND 100),
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT beneficiaries_check CHECK (NOT is_holder OR email IS NOT NULL)  -- a holder logs in by e-mail
);
CREATE INDEX beneficiaries_risk_item_id_idx ON insurance.beneficiaries (risk_item_id);
COMMENT ON TABLE insurance.beneficiaries IS 'Beneficiaries of a risk item; is_holder marks who may use post-sales';
COMMENT ON COLUMN insurance.beneficiaries.is_holder IS 'The beneficiary is the policy holder: may log in to post-sales by e-mail';
COMMENT ON COLUMN insurance.beneficiaries.share IS 'Percentage of the benefit; the shares of an item add up to at most 100';
-- Constraint comments are the messages gateway._broken_rules reports for a broken rule.
COMMENT ON CONSTRAINT beneficiaries_email_check ON insurance.beneficiaries IS 'must be an e-mail address';
COMMENT ON CONSTRAINT beneficiaries_check ON insurance.beneficiaries IS 'the holder needs an e-mail address';

-- check_beneficiary_shares(): BEFORE trigger; the shares of an item's beneficiaries add up
-- to at most 100, on every surface. Serialised per item (a row lock on the item that FK
-- checks do not wait for), and SECURITY DEFINER so that it sums every row whatever the
-- caller may see.
CREATE FUNCTION insurance.check_beneficiary_shares() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _total numeric;
BEGIN
  PERFORM FROM insurance.risk_items ri WHERE ri.id = NEW.risk_item_id FOR NO KEY UPDATE;
  SELECT coalesce(sum(b.share), 0) + NEW.share INTO _total
    FROM insurance.beneficiaries b
   WHERE b.risk_item_id = NEW.risk_item_id AND (TG_OP = 'INSERT' OR b.id <> NEW.id);
  IF _total > 100 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'the shares of a risk item add up to at most 100',
      DETAIL = 'SHARES_EXCEED_100', HINT = jsonb_build_object('total', _total)::text;
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance.check_beneficiary_shares() IS
  'BEFORE INSERT/UPDATE trigger of beneficiaries: raises PT422 SHARES_EXCEED_100 when the item''s shares would pass 100. Trigger only.';
REVOKE ALL ON FUNCTION insurance.check_beneficiary_shares() FROM PUBLIC;

-- beneficiary_json: the one JSON shape of a beneficiary, which the post-sales answers, the
-- gateway's documents and the StandardRiskItem share. A SQL-standard body without a SET
-- clause, so that the planner inlines it into each list (no call per row).
CREATE FUNCTION insurance.beneficiary_json(_b insurance.beneficiaries) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT pg_catalog.jsonb_build_object('id', _b.id, 'name', _b.name, 'email', _b.email, 'document', _b.document,
                                       'relationship', _b.relationship, 'isHolder', _b.is_holder, 'share', _b.share);
END;
COMMENT ON FUNCTION insurance.beneficiary_json(insurance.beneficiaries) IS
  'One beneficiary as every surface shows it: {id, name, email, document, relationship, isHolder, share}. '
  'Inlined; holder, channel, service and dashboard roles.';
GRANT EXECUTE ON FUNCTION insurance.beneficiary_json(insurance.beneficiaries)
   TO insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

CREATE TRIGGER beneficiaries_check_shares
  BEFORE INSERT OR UPDATE OF share, risk_item_id ON insurance.beneficiaries
  FOR EACH ROW EXECUTE FUNCTION insurance.check_beneficiary_shares();

GRANT SELECT, INSERT, UPDATE, DELETE ON insurance.beneficiaries TO insurance_holder, insurance_service;
GRANT SELECT, INSERT ON insurance.beneficiaries TO insurance_channel;
GRANT SELECT ON insurance.beneficiaries TO insurance_dashboard;
ALTER TABLE insurance.beneficiaries ENABLE ROW LEVEL SECURITY;

COMMIT;
