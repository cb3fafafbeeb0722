"""``python -m kubebench`` and the ``kubebench`` script: the command line, or, where only the part that
runs inside jobs is installed (``pip install kubebench[job]``), one line saying what to install."""

from __future__ import annotations

import sys

#: What the command line needs beyond the job's dependencies (the ``cli`` extra), by import name.
CLI_PACKAGES = frozenset({"pydantic", "yaml", "jinja2", "_jsonnet", "typer", "rich", "sqlalchemy", "kubernetes", "fsspec",
                          "psutil", "plotly", "alembic", "prometheus_client", "grafana_foundation_sdk", "fastapi",
                          "uvicorn", "fastapi_offline", "click"})


def main() -> None:
    """Run the command line."""
    try:
        from .cli import main as cli_main
    except ImportError as e:
        if (e.name or "").split(".")[0] not in CLI_PACKAGES:
            raise
        sys.stderr.write(f"kubebench: the command line needs {e.name}, which is not installed here "
                         "(this is kubebench's job part): pip install 'kubebench[cli]'\n")
        raise SystemExit(2) from None
    cli_main()


if __name__ == "__main__":
    main()
