-- Deploy insurance:risk_item_documents to pg
-- The read model of the risk items: each item's answer document (item, package uid,
-- beneficiaries), stored and kept in the same transaction as every write that changes it, so
-- that a list reads an index range and an aggregate of stored documents instead of building
-- them (issue 23, item 1; docs/performance.md). Who may read which document is decided by the
-- policies of each surface, placed with their siblings: channel_rls (the channel's),
-- claimant_rls (the holder's), standard_risk_item (the service role's).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.risk_item_documents (
  risk_item_id bigint PRIMARY KEY REFERENCES insurance.risk_items ON DELETE CASCADE,
  -- A copy of risk_items.channel_id, for the channel's policy (no join per row). No foreign
  -- key of its own: it follows the item, whose own key to channels holds.
  channel_id   uuid,
  document     jsonb NOT NULL
);
COMMENT ON TABLE insurance.risk_item_documents IS
  'Each risk item''s answer document, kept by the triggers of risk_items, beneficiaries and packages in the '
  'same transaction; equal to insurance.computed_risk_item_documents';
COMMENT ON COLUMN insurance.risk_item_documents.risk_item_id IS 'The item; its delete removes the document';
COMMENT ON COLUMN insurance.risk_item_documents.channel_id IS
  'The item''s channel (a copy of risk_items.channel_id, moved with it), read by the channel''s policy';
COMMENT ON COLUMN insurance.risk_item_documents.document IS
  'The gateway''s answer: {id, uid, package_uid, policy_uid, status, variant, insured_subject, '
  'beneficiaries (insurance.beneficiary_json by id), metadata, created_at, updated_at}';
-- Written only by the triggers below (SECURITY DEFINER); each surface's SELECT policy comes
-- with that surface's change.
ALTER TABLE insurance.risk_item_documents ENABLE ROW LEVEL SECURITY;

-- computed_risk_item_documents: THE computation of a document, in this one place: the
-- triggers' refresh, the backfill below and the pgTAP comparison (stored = computed) read it.
-- The owner's only (no grant): it reads every item whatever RLS would let a caller see.
CREATE VIEW insurance.computed_risk_item_documents AS
SELECT r.id AS risk_item_id, r.channel_id,
       pg_catalog.jsonb_build_object(
         'id', r.id,
         'uid', r.uid,
         'package_uid', p.uid,
         'policy_uid', r.policy_uid,
         'status', r.status,
         'variant', r.variant,
         'insured_subject', r.insured_subject,
         'beneficiaries', coalesce(b.list, '[]'),
         'metadata', r.metadata,
         'created_at', r.created_at,
         'updated_at', r.updated_at) AS document
  FROM insurance.risk_items r
  JOIN insurance.packages p ON p.id = r.package_id
  LEFT JOIN LATERAL (
    SELECT pg_catalog.jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.id) AS list
      FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id) AS b ON true;
COMMENT ON VIEW insurance.computed_risk_item_documents IS
  'Each risk item''s document computed from its tables (what risk_item_documents stores); owner only';

-- _refresh_risk_item_documents(ids, lock): stores the computed document of each item of ids
-- that still exists (an item deleted in the same statement yields nothing: its document went
-- with it, by the cascade). Set-based: one lock statement and one upsert per call.
--
-- Concurrency (READ COMMITTED, what the app uses). Two transactions may change one item's
-- document through different tables: one updates the item (a PATCH, an emission's metadata),
-- the other a beneficiary, or a package rename. Each computes the document from its own
-- snapshot; without more, the one that upserts last would store a document missing the
-- other's change (a lost update of the document). So, with _lock, the refresh first locks
-- the items (FOR NO KEY UPDATE, in id order: two refreshes of several items cannot
-- deadlock on each other), as an UPDATE of the item does: the second writer waits until
-- the first commits. Then it computes in a SEPARATE statement: in READ COMMITTED a new
-- statement takes a new snapshot, which sees what the lock waited for. The writes that
-- already hold the lock (an UPDATE of the item, a beneficiary's insert or share change:
-- their BEFORE triggers lock the item) pay only the check. Without _lock: the items were
-- inserted by this very statement, so no other transaction can see, let alone change them.
-- Planned once per session (force_generic_plan): left to the plan cache, the upsert from the
-- view was planned again on every call (a custom plan for one id looks cheaper than the
-- generic one for an array), which cost three times what running it does (measured: about
-- 330 us of wall time per one-item refresh against 100 on the loaded bench machine). The
-- generic plan is the by-key one: an index probe of risk_items, packages and beneficiaries
-- per id.
CREATE FUNCTION insurance._refresh_risk_item_documents(_ids bigint[], _lock boolean) RETURNS void
LANGUAGE plpgsql SET search_path = '' SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  IF pg_catalog.cardinality(_ids) = 0 THEN
    RETURN;
  END IF;
  IF _lock THEN
    PERFORM FROM insurance.risk_items r WHERE r.id = ANY (_ids) ORDER BY r.id FOR NO KEY UPDATE OF r;
  END IF;
  INSERT INTO insurance.risk_item_documents AS d (risk_item_id, channel_id, document)
  SELECT c.risk_item_id, c.channel_id, c.document
    FROM insurance.computed_risk_item_documents c
   WHERE c.risk_item_id = ANY (_ids)
   ORDER BY c.risk_item_id
  ON CONFLICT (risk_item_id) DO UPDATE
     SET channel_id = excluded.channel_id, document = excluded.document
   WHERE (d.channel_id, d.document) IS DISTINCT FROM (excluded.channel_id, excluded.document);
END
$$;
COMMENT ON FUNCTION insurance._refresh_risk_item_documents(bigint[], boolean) IS
  'Stores the computed document of each existing item of _ids (upsert); with _lock, first locks the items '
  '(FOR NO KEY UPDATE, id order) so that concurrent writers of one item refresh one after the other. Returns '
  'nothing. Owner only: called by the document triggers.';
REVOKE ALL ON FUNCTION insurance._refresh_risk_item_documents(bigint[], boolean) FROM PUBLIC;

-- The triggers: one statement each per write statement (transition tables), SECURITY DEFINER
-- because the writers' roles (channel, holder, service) may not write the documents.

CREATE FUNCTION insurance._risk_item_documents_of_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  -- An UPDATE holds its rows' locks already; an INSERT's rows are its own (see the refresh).
  PERFORM insurance._refresh_risk_item_documents(ARRAY(SELECT n.id FROM new_rows n), TG_OP = 'UPDATE');
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION insurance._risk_item_documents_of_items() IS
  'AFTER INSERT / UPDATE statement trigger of risk_items (transition table new_rows): refreshes the '
  'documents of the written items (a PATCH, an emission''s metadata, a move to another channel). Trigger only.';
REVOKE ALL ON FUNCTION insurance._risk_item_documents_of_items() FROM PUBLIC;

CREATE FUNCTION insurance._risk_item_documents_of_beneficiaries() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _ids bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    _ids := ARRAY(SELECT DISTINCT n.risk_item_id FROM new_rows n);
  ELSIF TG_OP = 'UPDATE' THEN  -- a beneficiary moved to another item changes both documents
    _ids := ARRAY(SELECT n.risk_item_id FROM new_rows n UNION SELECT o.risk_item_id FROM old_rows o);
  ELSE
    -- Also the cascade of an item's delete: that item is gone and yields no document.
    _ids := ARRAY(SELECT DISTINCT o.risk_item_id FROM old_rows o);
  END IF;
  PERFORM insurance._refresh_risk_item_documents(_ids, true);
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION insurance._risk_item_documents_of_beneficiaries() IS
  'AFTER INSERT / UPDATE / DELETE statement trigger of beneficiaries (transition tables): refreshes the '
  'documents of the items whose beneficiaries changed. Trigger only.';
REVOKE ALL ON FUNCTION insurance._risk_item_documents_of_beneficiaries() FROM PUBLIC;

CREATE FUNCTION insurance._risk_item_documents_of_packages() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  -- Only a new uid changes the documents (they hold no other package column): a rename
  -- rewrites its items' documents, one set-based refresh however many items it sells.
  PERFORM insurance._refresh_risk_item_documents(ARRAY(
            SELECT r.id FROM new_rows n JOIN old_rows o ON o.id = n.id
              JOIN insurance.risk_items r ON r.package_id = n.id
             WHERE n.uid IS DISTINCT FROM o.uid), true);
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION insurance._risk_item_documents_of_packages() IS
  'AFTER UPDATE statement trigger of packages (transition tables): a package whose uid changed has its '
  'items'' documents rewritten. Trigger only.';
REVOKE ALL ON FUNCTION insurance._risk_item_documents_of_packages() FROM PUBLIC;

CREATE TRIGGER risk_items_documents_insert AFTER INSERT ON insurance.risk_items
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_items();
CREATE TRIGGER risk_items_documents_update AFTER UPDATE ON insurance.risk_items
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_items();
CREATE TRIGGER beneficiaries_documents_insert AFTER INSERT ON insurance.beneficiaries
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_beneficiaries();
CREATE TRIGGER beneficiaries_documents_update AFTER UPDATE ON insurance.beneficiaries
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_beneficiaries();
CREATE TRIGGER beneficiaries_documents_delete AFTER DELETE ON insurance.beneficiaries
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_beneficiaries();
CREATE TRIGGER packages_documents_update AFTER UPDATE ON insurance.packages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION insurance._risk_item_documents_of_packages();

-- The items that exist already (a database restored before this change).
INSERT INTO insurance.risk_item_documents (risk_item_id, channel_id, document)
SELECT c.risk_item_id, c.channel_id, c.document FROM insurance.computed_risk_item_documents c;
CREATE POLICY risk_item_documents_select_service ON insurance.risk_item_documents
  FOR SELECT TO insurance_service USING (true);
GRANT SELECT ON insurance.risk_item_documents TO insurance_service;

-- The stored documents of their items (postsales.risk_item_json reads them).
CREATE POLICY risk_item_documents_select_holder ON insurance.risk_item_documents
  FOR SELECT TO insurance_holder
  USING (risk_item_id IN (SELECT ac.risk_item_id FROM insurance.authorized_claimants ac
                           WHERE ac.email = (SELECT insurance.claim('email'))));
GRANT SELECT ON insurance.risk_item_documents TO insurance_holder;

-- The stored documents of its items (the gateway's answers): the item's channel is copied
-- onto the document, so the same condition as its items', with no join.
GRANT SELECT ON insurance.risk_item_documents TO insurance_channel;
CREATE POLICY risk_item_documents_select_channel ON insurance.risk_item_documents
  FOR SELECT TO insurance_channel
  USING (channel_id = (SELECT insurance.claim('sub'))::uuid);

COMMIT;
