-- Deploy insurance:beneficiaries to pg
-- Beneficiaries of a risk item, at most 50 each; those with is_holder = true may log in to post-sales
-- (their e-mails are mirrored into authorized_claimants by claimant_rls).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
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

-- check_beneficiary_count(): BEFORE trigger; a risk item holds at most 50 beneficiaries, on
-- every surface (the gateway's creation and the holder's additions alike). Serialised per item
-- by the same row lock as the shares' check; SECURITY DEFINER so that it counts every row
-- whatever the caller may see. Rows inserted earlier by the same statement are counted.
CREATE FUNCTION insurance.check_beneficiary_count() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _count integer;
BEGIN
  PERFORM FROM insurance.risk_items ri WHERE ri.id = NEW.risk_item_id FOR NO KEY UPDATE;
  SELECT count(*) INTO _count FROM insurance.beneficiaries b
   WHERE b.risk_item_id = NEW.risk_item_id AND (TG_OP = 'INSERT' OR b.id <> NEW.id);
  IF _count >= 50 THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'a risk item holds at most 50 beneficiaries',
      DETAIL = 'BENEFICIARY_LIMIT', HINT = '{"limit": 50}';
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance.check_beneficiary_count() IS
  'BEFORE INSERT/UPDATE OF risk_item_id trigger of beneficiaries: raises PT422 BENEFICIARY_LIMIT (HINT '
  '{limit: 50}) when the item already holds 50 beneficiaries. Trigger only.';
REVOKE ALL ON FUNCTION insurance.check_beneficiary_count() FROM PUBLIC;

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
GRANT EXECUTE ON FUNCTION insurance.beneficiary_json(insurance.beneficiaries) TO insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

CREATE TRIGGER beneficiaries_check_shares
  BEFORE INSERT OR UPDATE OF share, risk_item_id ON insurance.beneficiaries
  FOR EACH ROW EXECUTE FUNCTION insurance.check_beneficiary_shares();
CREATE TRIGGER beneficiaries_check_count
  BEFORE INSERT OR UPDATE OF risk_item_id ON insurance.beneficiaries
  FOR EACH ROW EXECUTE FUNCTION insurance.check_beneficiary_count();

GRANT SELECT, INSERT, UPDATE, DELETE ON insurance.beneficiaries TO insurance_holder, insurance_service;
GRANT SELECT, INSERT ON insurance.beneficiaries TO insurance_channel;
GRANT SELECT ON insurance.beneficiaries TO insurance_dashboard;
ALTER TABLE insurance.beneficiaries ENABLE ROW LEVEL SECURITY;
CREATE POLICY beneficiaries_select_service ON insurance.beneficiaries
  FOR SELECT TO insurance_service USING (true);

CREATE POLICY beneficiaries_select_holder ON insurance.beneficiaries
  FOR SELECT TO insurance_holder
  USING (risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                           WHERE ac.email = (SELECT insurance.claim('email'))));

-- A holder adds and edits beneficiaries of their items, never a holder (is_holder is set by
-- the channel or the service), and never removes a holder.
CREATE POLICY beneficiaries_insert_holder ON insurance.beneficiaries
  FOR INSERT TO insurance_holder
  WITH CHECK (NOT is_holder
              AND risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                                    WHERE ac.email = (SELECT insurance.claim('email'))));

CREATE POLICY beneficiaries_update_holder ON insurance.beneficiaries
  FOR UPDATE TO insurance_holder
  USING (risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                           WHERE ac.email = (SELECT insurance.claim('email'))));

CREATE POLICY beneficiaries_delete_holder ON insurance.beneficiaries
  FOR DELETE TO insurance_holder
  USING (NOT is_holder
         AND risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                               WHERE ac.email = (SELECT insurance.claim('email'))));

-- A holder may not flip is_holder nor move a beneficiary to another item.
REVOKE UPDATE ON insurance.beneficiaries FROM insurance_holder;
GRANT UPDATE (name, email, document, relationship, share) ON insurance.beneficiaries TO insurance_holder;
REVOKE INSERT ON insurance.beneficiaries FROM insurance_holder;
GRANT INSERT (risk_item_id, name, email, document, relationship, share) ON insurance.beneficiaries
   TO insurance_holder;

-- Holder e-mails are looked up by the OTP request and by the mirroring trigger.
CREATE INDEX beneficiaries_holder_email_idx ON insurance.beneficiaries (email, risk_item_id)
  WHERE is_holder;

-- ---------------------------------------------------------------- mirroring trigger

-- mirror_holder_claimants(): AFTER trigger on beneficiaries; keeps one authorized_claimants
-- row per (holder e-mail, item): added with a holder, removed when no holder of the item
-- has that e-mail any more. SECURITY DEFINER: channels and holders may not write claimants.
CREATE FUNCTION insurance.mirror_holder_claimants() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.is_holder AND OLD.email IS NOT NULL THEN
    DELETE FROM insurance.authorized_claimants ac
     WHERE ac.email = OLD.email AND ac.risk_item_id = OLD.risk_item_id
       AND NOT EXISTS (SELECT FROM insurance.beneficiaries b
                        WHERE b.risk_item_id = OLD.risk_item_id AND b.email = OLD.email AND b.is_holder);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.is_holder AND NEW.email IS NOT NULL THEN
    INSERT INTO insurance.authorized_claimants (email, risk_item_id)
    VALUES (NEW.email, NEW.risk_item_id)
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION insurance.mirror_holder_claimants() IS
  'AFTER trigger of beneficiaries: keeps one authorized_claimants row per (holder e-mail, item) in step'
  ' with the beneficiaries marked is_holder. Trigger only.';
REVOKE ALL ON FUNCTION insurance.mirror_holder_claimants() FROM PUBLIC;

CREATE TRIGGER beneficiaries_mirror_holder_claimants
  AFTER INSERT OR DELETE OR UPDATE OF email, is_holder, risk_item_id ON insurance.beneficiaries
  FOR EACH ROW EXECUTE FUNCTION insurance.mirror_holder_claimants();

-- Holders that exist already (a database restored before this change) get their rows.
INSERT INTO insurance.authorized_claimants (email, risk_item_id)
SELECT DISTINCT b.email, b.risk_item_id FROM insurance.beneficiaries b
 WHERE b.is_holder AND b.email IS NOT NULL
ON CONFLICT DO NOTHING;

-- Beneficiaries follow their risk item; the subquery on risk_items is itself under the
-- channel's policy above.
CREATE POLICY beneficiaries_select_channel ON insurance.beneficiaries
  FOR SELECT TO insurance_channel
  USING (EXISTS (SELECT FROM insurance.risk_items r WHERE r.id = risk_item_id));

CREATE POLICY beneficiaries_insert_channel ON insurance.beneficiaries
  FOR INSERT TO insurance_channel
  WITH CHECK (EXISTS (SELECT FROM insurance.risk_items r WHERE r.id = risk_item_id));
-- Any beneficiary's e-mail (the holders' partial index of claimant_rls does not cover the others).
CREATE INDEX beneficiaries_email_idx ON insurance.beneficiaries (email) WHERE email IS NOT NULL;

COMMIT;
