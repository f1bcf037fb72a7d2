-- Verify insurance:gateway_item_ids on pg
DO $$
BEGIN
  ASSERT pg_catalog.pg_get_viewdef('gateway.risk_item_documents'::regclass) LIKE '%jsonb_build_object(''id'', r.id,%',
         'the gateway document carries the item''s id';
END
$$;
