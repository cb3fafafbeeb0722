"""The results store: experiments, trials, runs and metrics in SQL (SQLite default, any SQLAlchemy URL)."""
