"""The part of kubebench that runs inside a job (``pip install kubebench[job]``): its modules import
with the runner's frameworks absent, and the command line says what to install where only it is there."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: Makes every import of these packages fail, as in an environment where they are not installed.
BLOCK = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Absent())
"""
CLI_SIDE = ("fastapi", "sqlalchemy", "kubernetes", "plotly", "typer", "uvicorn", "alembic", "rich", "pydantic", "yaml",
            "jinja2", "starlette", "prometheus_client")
#: The job-side modules that need no ML framework (those that do import it first, and are in the contract).
JOB_MODULES = ("kubebench.workloads.synthetic", "kubebench.workloads.llm_load", "kubebench.workloads.measure",
               "kubebench.workloads.mllog", "kubebench.serving.client", "kubebench.serving.records",
               "kubebench.serving.metrics", "kubebench.serving.validate", "kubebench.serving.energy",
               "kubebench.efficiency.flops", "kubebench.efficiency.peaks", "kubebench.efficiency.counters")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    program = BLOCK.format(blocked=set(CLI_SIDE)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)


def test_the_jobs_modules_import_without_the_runners_frameworks() -> None:
    done = _python(f"""
        import importlib
        for name in {JOB_MODULES!r}:
            importlib.import_module(name)
        print("imported")
        """)
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr


def test_the_command_line_without_its_extra_says_what_to_install() -> None:
    done = _python("""
        sys.argv = ["kubebench", "--help"]
        from kubebench.__main__ import main
        main()
        """)
    assert done.returncode == 2
    assert done.stderr.startswith("kubebench: the command line needs ") and "pip install 'kubebench[cli]'" in done.stderr
    assert "Traceback" not in done.stderr
