"""A person's data: the map of where it lives (insurance.personal_data, docs/privacy.md), its
export and its erasure under retention, and the audit rows of who looked (docs/privacy.md)."""
