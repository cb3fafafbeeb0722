"""N14 (review 2026-12-02): `mask_url` showed a password with a space in it and `sslpassword=` in
clear (in `run`'s output and logs), and took quadratic time (a 32 KB line: 1.2 s)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.timing import scaled
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.redact import mask_url

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.mark.parametrize("text, secret", [
    ("postgresql+psycopg://kubebench:my secret pw@127.0.0.1:5432/kb", "my secret pw"),
    ("error: store postgresql://kb:tab\tpw@db/kb: connection refused", "tab\tpw"),
    ("postgresql://kb@db/kb?sslpassword=KEYPASS", "KEYPASS"),
    ("postgresql://kb@db/kb?sslmode=require&sslpassword=KEYPASS&x=1", "KEYPASS"),
    ("postgresql://kb@db/kb?PASSWORD=UPPER", "UPPER"),
    ("postgresql://kb@db/kb;pwd=SEMI", "SEMI"),
    ("mysql://kb@db/kb?db_secret=S3CR3T", "S3CR3T"),
    ("postgresql://kb@db/kb?password = spaced", "spaced"),
])
def test_every_url_form_has_its_secret_masked(text: str, secret: str) -> None:
    masked = mask_url(text)
    assert secret not in masked and "***" in masked


def test_what_is_no_secret_is_left_as_it_was() -> None:
    text = "reached postgresql://kb@db:5432/kb and postgresql://db:5432/kb; mail admin@example.org (x=1)"
    assert mask_url(text) == text


@pytest.mark.parametrize("text", ["a." * 100_000, "a://b:" * 30_000, "&" + "a" * 200_000,
                                  "x://u:" * 30_000 + "@", "?password" * 20_000])
def test_masking_takes_linear_time(text: str) -> None:
    started = time.perf_counter()
    mask_url(text)
    assert time.perf_counter() - started < scaled(5.0)  # the quadratic rule took a minute or more on these


def test_run_shows_neither_a_spaced_password_nor_sslpassword(postgres_url: str, home: Path, write) -> None:
    """The review's `pgfaults.py` part 5 (PostgreSQL with trust auth: any password connects)."""
    spec = write("s.yaml", "name: m\njob: {command: [python, -c, 'print(1)']}\ntelemetry: {enabled: false}\n")
    for url in (postgres_url.replace("kubebench@", "kubebench:my secret pw@"), postgres_url + "?sslpassword=KEYPASS"):
        done = runner.invoke(app, ["run", str(spec), "--store", url, "--repeats", "1"])
        assert done.exit_code == 0, done.output
        assert "my secret pw" not in done.output and "KEYPASS" not in done.output
        assert "store postgresql+psycopg://kubebench" in done.output
