-- Deploy insurance:postsales_emission to pg
-- requires: emission_claims
-- requires: entry_point_roles
-- requires: claimant_rls
-- POST /api/integrations/post-sales belongs to the post-sales surface: the holder names the
-- item of a StandardRiskItem by its uid (the integer id stays an alternative). The item is
-- read here as the holder, under the claimant RLS policies, never taken from the body.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- begin_emission: claim the POST_SALES key of an item the holder reaches, by uid or id (when
-- both are given they must name the same item). An item the holder cannot see is PT401
-- ACCESS_DENIED, as integrations.begin_post_sales_emission answers it.
CREATE FUNCTION postsales.begin_emission(_risk_item_id bigint, _risk_item_uid uuid,
                                         _claimed_by text, _lease_seconds integer)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _id bigint;
BEGIN
  IF _risk_item_id IS NULL AND _risk_item_uid IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'give the item''s uid (or its id)',
                          DETAIL = 'VALIDATION_ERROR', HINT = '{"field": "uid"}';
  END IF;
  SELECT r.id INTO _id FROM insurance.risk_items r
   WHERE (_risk_item_uid IS NULL OR r.uid = _risk_item_uid)
     AND (_risk_item_id IS NULL OR r.id = _risk_item_id);
  RETURN integrations.begin_post_sales_emission(_id, _claimed_by, _lease_seconds);
END
$$;
REVOKE ALL ON FUNCTION postsales.begin_emission(bigint, uuid, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.begin_emission(bigint, uuid, text, integer)
   TO insurance_holder, insurance_app;

COMMIT;
