"""What users write: the benchmark spec and the experimenter's parameters, loaded and validated."""
