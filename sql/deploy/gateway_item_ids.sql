-- Deploy insurance:gateway_item_ids to pg
-- requires: gateway_risk_items
-- One identifier story: the gateway answered an item with its uid only, while the post-sales
-- routes and the dashboard name it by id as well. Every gateway answer that carries an item
-- (list, page, read, create) now carries both. Only the document changes; the view keeps
-- its columns (and security_invoker), so the functions that read it stay as they are.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE OR REPLACE VIEW gateway.risk_item_documents WITH (security_invoker = true) AS
SELECT r.id, r.uid, r.policy_uid,
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
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
             'name', b.name, 'email', b.email, 'document', b.document,
             'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
           ORDER BY b.id) AS list
      FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id) AS b ON true;

COMMIT;
