"""Throwaway servers for tests and benchmarks: PostgreSQL (Debian's binaries) and S3 (moto) on loopback."""
