-- Deploy insurance:channel_packages to pg
-- The packages a channel may sell, checked on its inserts, and the metadata keys the system owns.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- Partners stay in their lane. A channel sells only the packages it is given (a partner
-- must not start a dispatch to another partner's insurer, nor claim its policy numbers),
-- and the metadata keys that the system owns (`integration`: the emission state the
-- dashboard shows) never come from partner input. Both are checked on the channel's own
-- inserts by a trigger, inside the gateway's one call (no extra round trip).

CREATE TABLE insurance.channel_packages (
  channel_id uuid NOT NULL REFERENCES insurance.channels ON DELETE CASCADE,
  package_id bigint NOT NULL REFERENCES insurance.packages ON DELETE CASCADE,
  PRIMARY KEY (channel_id, package_id)
);
CREATE INDEX channel_packages_package_id_idx ON insurance.channel_packages (package_id);
COMMENT ON TABLE insurance.channel_packages IS 'The packages each partner channel may sell';
ALTER TABLE insurance.channel_packages ENABLE ROW LEVEL SECURITY;  -- no policy: the functions below
GRANT SELECT ON insurance.channel_packages TO insurance_service, insurance_dashboard;
CREATE POLICY channel_packages_select_service ON insurance.channel_packages FOR SELECT TO insurance_service USING (true);
CREATE POLICY channel_packages_select_dashboard ON insurance.channel_packages FOR SELECT TO insurance_dashboard USING (true);

-- system_metadata_keys(): the keys of risk_items.metadata that only the system writes.
CREATE FUNCTION insurance.system_metadata_keys() RETURNS text[]
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT ARRAY['integration']
$$;
COMMENT ON FUNCTION insurance.system_metadata_keys() IS
  'The keys of risk_items.metadata that only the system writes (integration). Any role.';

-- _check_channel_item: a trigger; a risk item inserted by a channel (role insurance_channel)
-- must be of a package the channel sells (PT403 PACKAGE_NOT_ALLOWED, before any duplicate
-- check) and carry no system-owned metadata key (PT422 RESERVED_FIELD, the field in HINT).
CREATE FUNCTION insurance._check_channel_item() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
  _reserved text[];
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_channel' THEN
    RETURN NEW;  -- operators and the system are trusted
  END IF;
  IF NOT EXISTS (SELECT FROM insurance.channel_packages cp
                  WHERE cp.channel_id = NEW.channel_id AND cp.package_id = NEW.package_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'PT403', MESSAGE = 'this channel may not sell this package',
      DETAIL = 'PACKAGE_NOT_ALLOWED',
      HINT = pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
               'field', 'package_uid', 'message', 'not a package of this channel'))::text;
  END IF;
  SELECT pg_catalog.array_agg(k ORDER BY k) INTO _reserved
    FROM pg_catalog.jsonb_object_keys(NEW.metadata) AS k
   WHERE k = ANY (insurance.system_metadata_keys());
  IF _reserved IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'metadata holds keys that the system owns',
      DETAIL = 'RESERVED_FIELD',
      HINT = (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'field', 'metadata.' || k, 'message', 'is owned by the system'))
                FROM unnest(_reserved) AS k)::text;
  END IF;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance._check_channel_item() IS
  'BEFORE INSERT trigger of risk_items under insurance_channel: raises PT403 PACKAGE_NOT_ALLOWED for a package the channel '
  'does not sell, PT422 RESERVED_FIELD for system-owned metadata keys. Trigger only.';
REVOKE ALL ON FUNCTION insurance._check_channel_item() FROM PUBLIC;
CREATE TRIGGER risk_items_channel_lane BEFORE INSERT ON insurance.risk_items
  FOR EACH ROW WHEN (NEW.channel_id IS NOT NULL) EXECUTE FUNCTION insurance._check_channel_item();

COMMIT;
