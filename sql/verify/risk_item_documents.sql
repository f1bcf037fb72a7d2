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
SELECT 'insurance._refresh_risk_item_documents(bigint[],boolean)'::regprocedure,
       'insurance._risk_item_documents_of_items()'::regprocedure,
       'insurance._risk_item_documents_of_beneficiaries()'::regprocedure,
       'insurance._risk_item_documents_of_packages()'::regprocedure;
DO $$
BEGIN
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_documents_insert' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_documents_insert missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'risk_items_documents_update' AND tgrelid = 'insurance.risk_items'::regclass), 'trigger risk_items_documents_update missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_documents_insert' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_documents_insert missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_documents_update' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_documents_update missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'beneficiaries_documents_delete' AND tgrelid = 'insurance.beneficiaries'::regclass), 'trigger beneficiaries_documents_delete missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgname = 'packages_documents_update' AND tgrelid = 'insurance.packages'::regclass), 'trigger packages_documents_update missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_item_documents' AND policyname = 'risk_item_documents_select_service'), 'policy risk_item_documents_select_service missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_item_documents' AND policyname = 'risk_item_documents_select_holder'), 'policy risk_item_documents_select_holder missing';
  ASSERT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname || '.' || tablename = 'insurance.risk_item_documents' AND policyname = 'risk_item_documents_select_channel'), 'policy risk_item_documents_select_channel missing';
END
$$;
