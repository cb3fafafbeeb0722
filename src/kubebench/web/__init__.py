"""The web dashboard (``kubebench serve``): a JSON API over the store and pages built on it."""
