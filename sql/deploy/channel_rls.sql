-- Deploy insurance:channel_rls to pg
-- requires: risk_items
-- requires: beneficiaries
-- requires: risk_item_documents
-- requires: request_identity
-- A partner channel sees and creates only its own risk items and their beneficiaries:
-- the channel id is the `sub` claim of its gateway token. Read once per query, not per
-- row, through `(SELECT insurance.claim('sub'))`.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE POLICY risk_items_select_channel ON insurance.risk_items
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);

CREATE POLICY risk_items_insert_channel ON insurance.risk_items
  FOR INSERT TO insurance_channel
  WITH CHECK (channel_id = (SELECT insurance.claim('sub'))::uuid);

-- Beneficiaries follow their risk item; the subquery on risk_items is itself under the
-- channel's policy above.
CREATE POLICY beneficiaries_select_channel ON insurance.beneficiaries
  FOR SELECT TO insurance_channel
  USING (EXISTS (SELECT FROM insurance.risk_items r WHERE r.id = risk_item_id));

CREATE POLICY beneficiaries_insert_channel ON insurance.beneficiaries
  FOR INSERT TO insurance_channel
  WITH CHECK (EXISTS (SELECT FROM insurance.risk_items r WHERE r.id = risk_item_id));

-- The stored documents of its items (the gateway's answers): the item's channel is copied
-- onto the document, so the same condition as its items', with no join.
GRANT SELECT ON insurance.risk_item_documents TO insurance_channel;
CREATE POLICY risk_item_documents_select_channel ON insurance.risk_item_documents
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);

-- Its own item count (the gateway lists' total).
GRANT SELECT ON insurance.channel_item_counts TO insurance_channel;
CREATE POLICY channel_item_counts_select_channel ON insurance.channel_item_counts
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);

COMMIT;
