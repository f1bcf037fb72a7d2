-- Deploy insurance:claimant_rls to pg
-- requires: request_identity
-- requires: beneficiaries
-- requires: authorized_claimants
-- requires: risk_item_documents
-- The claimant check of post-sales as RLS: a holder (role insurance_holder, the token's
-- e-mail in request.jwt.claims) reaches a risk item, its beneficiaries and its claimant rows
-- only when authorized_claimants links that e-mail to the item. The holder beneficiaries'
-- e-mails are mirrored into authorized_claimants by a trigger, so adding, changing or
-- removing a holder moves access with it.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- policies
-- Every policy reads the claim as `(SELECT insurance.claim('email'))`: evaluated once per
-- query. The item check is an IN over the claimant rows of that e-mail (primary key
-- (email, risk_item_id)): one index range, hashed once per query.

CREATE POLICY authorized_claimants_select_holder ON insurance.authorized_claimants
  FOR SELECT TO insurance_holder
  USING (email = (SELECT insurance.claim('email')));

CREATE POLICY risk_items_select_holder ON insurance.risk_items
  FOR SELECT TO insurance_holder
  USING (id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                 WHERE ac.email = (SELECT insurance.claim('email'))));

-- UPDATE policies without WITH CHECK apply USING to the new row as well.
CREATE POLICY risk_items_update_holder ON insurance.risk_items
  FOR UPDATE TO insurance_holder
  USING (id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                 WHERE ac.email = (SELECT insurance.claim('email'))));

-- The stored documents of their items (postsales.risk_item_json reads them).
CREATE POLICY risk_item_documents_select_holder ON insurance.risk_item_documents
  FOR SELECT TO insurance_holder
  USING (risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                           WHERE ac.email = (SELECT insurance.claim('email'))));
GRANT SELECT ON insurance.risk_item_documents TO insurance_holder;

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

COMMIT;