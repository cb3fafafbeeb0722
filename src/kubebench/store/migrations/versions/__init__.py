"""One module per schema change; each sets ``schema_version`` in ``kubebench_meta``."""
