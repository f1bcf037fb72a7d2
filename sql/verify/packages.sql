-- Verify insurance:packages on pg
SELECT id, uid, name, sales_integration_slug, post_sales_integration_slug, created_at
  FROM insurance.packages WHERE false;
SELECT package_id, code, name, coverages, premium, currency FROM insurance.package_variants WHERE false;
