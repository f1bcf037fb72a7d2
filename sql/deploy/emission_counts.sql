-- Deploy insurance:emission_counts to pg
-- How many emissions are in each (status, provider), for the insurance_emissions gauge,
-- without counting the table at every scrape. Statement triggers append one delta row per
-- (status, provider) a statement changes (append-only: concurrent emissions never wait on a
-- shared counter row); insurance.fold_emission_counts() moves the deltas into the totals
-- when the gauge is read.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

CREATE TABLE insurance.emission_counts (
  status   text NOT NULL,
  provider text NOT NULL,
  count    bigint NOT NULL,
  PRIMARY KEY (status, provider)
);
CREATE TABLE insurance.emission_count_deltas (
  status   text NOT NULL,
  provider text NOT NULL,
  -- squawk-ignore prefer-bigint-over-int -- the change of one statement, folded every scrape
  delta    integer NOT NULL
);
COMMENT ON TABLE insurance.emission_counts IS 'Emissions per status and provider, folded from emission_count_deltas';
COMMENT ON TABLE insurance.emission_count_deltas IS 'Append-only +1/-1 per (status, provider) written by the emission triggers, folded into emission_counts at each scrape';
ALTER TABLE insurance.emission_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE insurance.emission_count_deltas ENABLE ROW LEVEL SECURITY;

INSERT INTO insurance.emission_counts (status, provider, count)
SELECT status, provider, count(*) FROM insurance.integration_emissions GROUP BY 1, 2;

-- _count_emissions: the statement trigger; +1 for every new (status, provider), -1 for every
-- old one. SECURITY DEFINER: the roles that write emissions may not write the counts.
CREATE FUNCTION insurance._count_emissions() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO insurance.emission_count_deltas (status, provider, delta)
    SELECT n.status, n.provider, count(*) FROM new_rows n GROUP BY 1, 2;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO insurance.emission_count_deltas (status, provider, delta)
    SELECT o.status, o.provider, -count(*) FROM old_rows o GROUP BY 1, 2;
  ELSE
    INSERT INTO insurance.emission_count_deltas (status, provider, delta)
    SELECT status, provider, sum(delta) FROM (
      SELECT n.status, n.provider, 1 AS delta FROM new_rows n JOIN old_rows o ON o.id = n.id
       WHERE (o.status, o.provider) IS DISTINCT FROM (n.status, n.provider)
      UNION ALL
      SELECT o.status, o.provider, -1 FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.status, o.provider) IS DISTINCT FROM (n.status, n.provider)) d
    GROUP BY 1, 2;
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION insurance._count_emissions() IS
  'AFTER statement trigger of integration_emissions: +1/-1 per (status, provider) into '
  'emission_count_deltas. Trigger only.';
REVOKE ALL ON FUNCTION insurance._count_emissions() FROM PUBLIC;

CREATE TRIGGER integration_emissions_count_insert AFTER INSERT ON insurance.integration_emissions
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._count_emissions();
CREATE TRIGGER integration_emissions_count_update AFTER UPDATE ON insurance.integration_emissions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION insurance._count_emissions();
CREATE TRIGGER integration_emissions_count_delete AFTER DELETE ON insurance.integration_emissions
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION insurance._count_emissions();

-- fold_emission_counts: move the deltas into the totals; returns the totals as
-- [{status, provider, count}] (rows that fell to 0 are kept, so a gauge goes to 0 rather
-- than vanishing). Two folds at once are safe: a delta is deleted, and so counted, once.
CREATE FUNCTION insurance.fold_emission_counts() RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  WITH folded AS (DELETE FROM insurance.emission_count_deltas RETURNING status, provider, delta)
  INSERT INTO insurance.emission_counts AS c (status, provider, count)
  SELECT status, provider, sum(delta) FROM folded GROUP BY 1, 2
  ON CONFLICT (status, provider) DO UPDATE SET count = c.count + excluded.count;
  RETURN coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                            'status', c.status, 'provider', c.provider, 'count', c.count)
                          ORDER BY c.status, c.provider)
                     FROM insurance.emission_counts c), '[]');
END
$$;
COMMENT ON FUNCTION insurance.fold_emission_counts() IS
  'Folds emission_count_deltas into emission_counts and returns the totals [{status, provider, count}] '
  '(zero rows kept). Service role (read_metrics) and operators.';
REVOKE ALL ON FUNCTION insurance.fold_emission_counts() FROM PUBLIC;

COMMIT;
