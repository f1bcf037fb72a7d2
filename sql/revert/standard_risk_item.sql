-- Revert insurance:standard_risk_item from pg
-- Back to the @v1.0 function, without the guard.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- standard_risk_item(id): the item as the orchestrator's StandardRiskItem (jsonb);
-- raises PT404 RISK_ITEM_NOT_FOUND when the caller cannot see it.
CREATE OR REPLACE FUNCTION integrations.standard_risk_item(risk_item_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _item jsonb;
BEGIN
  SELECT pg_catalog.jsonb_build_object(
           'id', r.id,
           'uid', r.uid,
           'package_id', r.package_id,
           'package_uid', p.uid,
           'channel_id', r.channel_id,
           'policy_uid', r.policy_uid,
           'status', r.status,
           'variant', r.variant,
           'insured_subject', r.insured_subject,
           'metadata', r.metadata,
           'policy', pg_catalog.jsonb_build_object(
                       'variantName', v.name, 'coverages', v.coverages,
                       'premium', v.premium, 'currency', v.currency,
                       'createdAt', r.created_at),
           'beneficiaries', coalesce((
             SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                      'name', b.name, 'email', b.email, 'document', b.document,
                      'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
                    ORDER BY b.id)
               FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id), '[]'::jsonb),
           'authorized_claimants', coalesce((
             SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('email', c.email) ORDER BY c.email)
               FROM insurance.authorized_claimants c WHERE c.risk_item_id = r.id), '[]'::jsonb))
    INTO _item
    FROM insurance.risk_items r
    JOIN insurance.packages p ON p.id = r.package_id
    JOIN insurance.package_variants v ON v.package_id = r.package_id AND v.code = r.variant
   WHERE r.id = standard_risk_item.risk_item_id;
  IF _item IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found',
                          DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _item;
END
$$;
COMMIT;
