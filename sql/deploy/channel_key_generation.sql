-- Deploy insurance:channel_key_generation to pg
-- requires: channels
-- The generation of a channel's API key: a new key (rotate) bumps it, whoever changes the
-- hash. Gateway tokens carry the generation they were issued under (claim `gen`), and
-- gateway.admit() refuses a token of an older one: a rotated key takes its tokens with it.
BEGIN;
SET LOCAL ROLE insurance_owner;

ALTER TABLE insurance.channels ADD COLUMN key_generation integer NOT NULL DEFAULT 1 CHECK (key_generation > 0);
COMMENT ON COLUMN insurance.channels.key_generation IS 'Bumped by every new API key; tokens carry it (claim gen)';

-- _bump_key_generation: a trigger; a changed api_key_hash is a new generation.
CREATE FUNCTION insurance._bump_key_generation() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF NEW.api_key_hash IS DISTINCT FROM OLD.api_key_hash THEN
    NEW.key_generation := OLD.key_generation + 1;
  ELSE
    NEW.key_generation := OLD.key_generation;  -- nobody sets it by hand
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER channels_key_generation BEFORE UPDATE ON insurance.channels
  FOR EACH ROW EXECUTE FUNCTION insurance._bump_key_generation();

COMMIT;
