-- Revert insurance:emission_claims from pg (back to @v1.0: no require_role guard)
BEGIN;
SET LOCAL ROLE insurance_owner;

-- begin_post_sales_emission: a holder's post-sales emission of an item they may reach
-- (an authorized_claimants row for the token's e-mail, else PT401 ACCESS_DENIED); runs as
-- the owner to claim the key, which the holder role cannot touch.
CREATE OR REPLACE FUNCTION integrations.begin_post_sales_emission(risk_item_id bigint, claimed_by text,
                                                       lease_seconds integer DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM insurance.authorized_claimants c
                  WHERE c.risk_item_id = begin_post_sales_emission.risk_item_id
                    AND c.email = lower(insurance.claim('email'))) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';
  END IF;
  RETURN integrations.begin_emission(risk_item_id, NULL, 'POST_SALES', claimed_by, lease_seconds);
END
$$;
REVOKE ALL ON FUNCTION integrations.begin_post_sales_emission(bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION integrations.begin_post_sales_emission(bigint, text, integer)
   TO insurance_holder, insurance_app;

COMMIT;
