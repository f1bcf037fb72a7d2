-- Deploy insurance:integrations_standard_risk_item to pg
-- StandardRiskItem as one JSON function, and the service role's read policies it needs.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;
-- standard_risk_items(ids): the StandardRiskItem of each item the caller can see, as one object
-- keyed by id ({"<id>": item}); an id it cannot see (or that does not exist) is absent.
-- integrations.begin_batch builds the items of a whole batch with it in one statement;
-- standard_risk_item(id) is the same shape for one id. Planned once per session, nested loops
-- only: driven by the ids, each item is an index lookup whatever the table's statistics say
-- (with `id = ANY (_ids)` a stale estimate made it a sequential scan of risk_items).
CREATE FUNCTION integrations.standard_risk_items(_ids bigint[]) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  -- The app calls it as insurance_service; the begin_* entry points (SECURITY DEFINER, guarded
  -- themselves, e.g. a holder's post-sales emission) call it as its owner.
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  RETURN (
    SELECT coalesce(pg_catalog.jsonb_object_agg(r.id, pg_catalog.jsonb_build_object(
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
             -- The stored document's (risk_item_documents: kept in the writes' transaction).
             'beneficiaries', coalesce((
               SELECT d.document -> 'beneficiaries'
                 FROM insurance.risk_item_documents d WHERE d.risk_item_id = r.id), '[]'::jsonb),
             'authorized_claimants', coalesce((
               SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('email', c.email) ORDER BY c.email)
                 FROM insurance.authorized_claimants c WHERE c.risk_item_id = r.id), '[]'::jsonb))), '{}')
      FROM (SELECT DISTINCT i.id FROM pg_catalog.unnest(_ids) AS i(id)) i
      JOIN insurance.risk_items r ON r.id = i.id
      JOIN insurance.packages p ON p.id = r.package_id
      JOIN insurance.package_variants v ON v.package_id = r.package_id AND v.code = r.variant);
END
$$;
COMMENT ON FUNCTION integrations.standard_risk_items(bigint[]) IS
  'Takes risk item ids; returns {"<id>": StandardRiskItem} for those the caller can see (the others are absent). '
  'Service role (and the begin_* entry points, through integrations.begin_batch).';
REVOKE ALL ON FUNCTION integrations.standard_risk_items(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.standard_risk_items(bigint[]) TO insurance_service;

-- standard_risk_item(id): the item as the orchestrator's StandardRiskItem (jsonb);
-- raises PT404 RISK_ITEM_NOT_FOUND when the caller cannot see it.
CREATE FUNCTION integrations.standard_risk_item(_risk_item_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _item jsonb;
BEGIN
  IF current_user <> 'insurance_owner' THEN
    PERFORM insurance.require_role('insurance_service');
  END IF;
  _item := integrations.standard_risk_items(ARRAY[_risk_item_id]) -> _risk_item_id::text;
  IF _item IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found',
                          DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _item;
END
$$;
COMMENT ON FUNCTION integrations.standard_risk_item(bigint) IS
  'The risk item as the orchestrator''s StandardRiskItem (item, package, policy variant, beneficiaries, claimants; '
  'integrations.standard_risk_items for one id); raises PT404 RISK_ITEM_NOT_FOUND when the caller cannot see it. '
  'Service role (and the begin_* entry points).';
REVOKE ALL ON FUNCTION integrations.standard_risk_item(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.standard_risk_item(bigint) TO insurance_service, insurance_app;

COMMIT;
