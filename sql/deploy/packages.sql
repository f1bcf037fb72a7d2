-- Deploy insurance:packages to pg
-- A package is a product sold by partners; it holds the integration configuration
-- and its product variants. Reference data: readable by every surface, no RLS.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.packages (
  id                          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uid                         text NOT NULL UNIQUE CHECK (uid ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  name                        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- Provider slugs; NULL means "no integration": the dispatch ends skipped.
  sales_integration_slug      text CHECK (sales_integration_slug ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  post_sales_integration_slug text CHECK (post_sales_integration_slug ~ '^[A-Z][A-Z0-9_]{0,63}$'),
  created_at                  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE insurance.packages IS 'Products sold by partners, with their integration configuration';
COMMENT ON COLUMN insurance.packages.sales_integration_slug IS 'Provider of the sales dispatch; NULL: skipped';
COMMENT ON COLUMN insurance.packages.post_sales_integration_slug IS 'Provider of the post-sales route (dashboard label: Post-sales Integration); NULL: skipped';

CREATE TABLE insurance.package_variants (
  package_id bigint NOT NULL REFERENCES insurance.packages ON DELETE CASCADE,
  code       text NOT NULL CHECK (code IN ('travel', 'health', 'home', 'lifestyle')),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  coverages  jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(coverages) = 'array'),
  premium    numeric(12, 2) NOT NULL DEFAULT 0 CHECK (premium >= 0),
  -- squawk-ignore ban-char-field -- an ISO 4217 code is exactly three letters (the CHECK says so)
  currency   char(3) NOT NULL DEFAULT 'EUR' CHECK (currency ~ '^[A-Z]{3}$'),
  PRIMARY KEY (package_id, code)
);
COMMENT ON TABLE insurance.package_variants IS 'Product variants of a package (code, name, coverages, premium)';

GRANT SELECT ON insurance.packages, insurance.package_variants
   TO insurance_holder, insurance_channel, insurance_service, insurance_dashboard;

COMMIT;
