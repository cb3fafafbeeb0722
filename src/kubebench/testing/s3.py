"""An S3-compatible server on loopback (moto's), with the standard AWS variables pointing at it.

    with S3Server() as s3:
        s3.create_bucket("bench")        # then s3://bench/... works through fsspec/s3fs and boto3
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .postgres import free_port

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

REGION = "us-east-1"


class S3Server:
    """moto's threaded server; ``env`` holds the AWS variables a client needs to use it."""

    def __init__(self) -> None:
        self.port = free_port()
        self._server: ThreadedMotoServer | None = None

    @property
    def endpoint(self) -> str:
        """``AWS_ENDPOINT_URL`` of the server."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables for this server (fake credentials)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}

    def start(self) -> "S3Server":
        """Start serving on the port."""
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving; safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def create_bucket(self, name: str) -> None:
        """Create a bucket (through boto3, as an operator would)."""
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket=name)

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def clear_client_caches() -> None:
    """Forget cached S3 filesystems (they hold the endpoint and credentials they were made with)."""
    try:
        import s3fs
    except ImportError:
        return
    s3fs.S3FileSystem.clear_instance_cache()


