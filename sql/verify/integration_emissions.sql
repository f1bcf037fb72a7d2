-- Verify insurance:integration_emissions on pg
SELECT id, risk_item_id, provider, event, status, external_id, response, error_history,
       next_retry_at, attempts, created_at, updated_at
  FROM insurance.integration_emissions WHERE false;
