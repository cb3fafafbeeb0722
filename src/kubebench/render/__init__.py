"""Pure rendering: a run and its parameters → the job manifest every backend executes."""
