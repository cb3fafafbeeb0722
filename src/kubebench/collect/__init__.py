"""Turn a finished run's files and logs into metrics."""
