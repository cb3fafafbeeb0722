"""Show results: terminal tables and machine-readable exports."""
