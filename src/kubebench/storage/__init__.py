"""Shared storage for the runs' folders: a local folder (the default), ``s3://``, ``gs://`` … via fsspec."""

from .storage import Storage, is_local, join

__all__ = ["Storage", "is_local", "join"]
