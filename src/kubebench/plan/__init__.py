"""From a validated spec to the runs to execute: sweep expansion, trials, repeats, stable ids."""
