-- Verify insurance:risk_item_documents on pg
SELECT risk_item_id, channel_id, document FROM insurance.risk_item_documents WHERE false;
SELECT risk_item_id, channel_id, document FROM insurance.computed_risk_item_documents WHERE false;
SELECT 'insurance._refresh_risk_item_documents(bigint[], boolean)'::regprocedure,
       'insurance._risk_item_documents_of_items()'::regprocedure,
       'insurance._risk_item_documents_of_beneficiaries()'::regprocedure,
       'insurance._risk_item_documents_of_packages()'::regprocedure;
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_trigger
           WHERE NOT tgisinternal
             AND (tgrelid, tgname) IN (('insurance.risk_items'::regclass, 'risk_items_documents_insert'),
                                       ('insurance.risk_items'::regclass, 'risk_items_documents_update'),
                                       ('insurance.beneficiaries'::regclass, 'beneficiaries_documents_insert'),
                                       ('insurance.beneficiaries'::regclass, 'beneficiaries_documents_update'),
                                       ('insurance.beneficiaries'::regclass, 'beneficiaries_documents_delete'),
                                       ('insurance.packages'::regclass, 'packages_documents_update'))) = 6,
         'the six document triggers are missing';
  ASSERT (SELECT relrowsecurity FROM pg_catalog.pg_class WHERE oid = 'insurance.risk_item_documents'::regclass),
         'risk_item_documents has no row level security';
  ASSERT NOT EXISTS (SELECT FROM insurance.risk_items r
                      WHERE NOT EXISTS (SELECT FROM insurance.risk_item_documents d WHERE d.risk_item_id = r.id)),
         'a risk item has no document';
END
$$;
