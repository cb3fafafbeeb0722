"""Jsonnet evaluated in a child process, within the render time budget and a memory limit.

The Jsonnet library evaluates in C++ without a way to stop it: ``local f(n) = f(n-1) + f(n-1)``
runs for hours, ``std.makeArray(1e9, …)`` takes gigabytes. A child process can be stopped, and its
memory capped; one child serves every evaluation of this process (one at a time), and is
started again after it was stopped.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from .. import limits
from ..errors import TemplateError, TemplateLimit
from .budget import count_rendered, out_of_time, spending

#: The child: one JSON request per line in, one JSON answer per line out.
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))  # its own cap: no preexec_fn in threads
import _jsonnet
for line in sys.stdin:
    request = json.loads(line)
    try:
        answer = {"ok": _jsonnet.evaluate_snippet(request["path"], request["text"], ext_codes=request["codes"])}
    except RuntimeError as e:
        answer = {"error": str(e).strip()}
    except MemoryError:
        answer = {"memory": True}
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


class JsonnetChild:
    """The child process evaluating Jsonnet for this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._owner = os.getpid()  # a forked copy of this process starts a child of its own

    def evaluate(self, path: str, text: str, codes: dict[str, str]) -> str:
        """The JSON text of a Jsonnet snippet; TemplateError with Jsonnet's message, or a TemplateLimit."""
        with self._lock, spending() as deadline:
            process = self._started()
            assert process.stdin is not None  # _started opens it as a pipe
            try:
                process.stdin.write(json.dumps({"path": path, "text": text, "codes": codes}) + "\n")
                process.stdin.flush()
                answer = self._answer(process, deadline)
            except BaseException:
                self.stop()  # its answer would come to the next request
                raise
        if "memory" in answer:
            raise TemplateLimit(_memory_message())
        if "error" in answer:
            raise TemplateError(f"jsonnet error: {answer['error']}")
        count_rendered(len(answer["ok"]))  # what a plan's renders make in all is bounded, Jsonnet's too
        rendered: str = answer["ok"]
        return rendered

    def _answer(self, process: subprocess.Popen[str], deadline: float) -> dict[str, Any]:
        assert process.stdout is not None  # _started opens it as a pipe
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
            raise out_of_time()
        line = process.stdout.readline()
        if not line:  # it died: the C++ allocator aborts at the memory limit
            raise TemplateLimit(f"jsonnet stopped without an answer (exit {process.wait()}): "
                                + _memory_message())
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _started(self) -> subprocess.Popen[str]:
        if self._owner != os.getpid():
            self._process, self._owner = None, os.getpid()
        if self._process is None or self._process.poll() is not None:
            memory = str(limits.JSONNET_BYTES.value())
            self._process = subprocess.Popen([sys.executable, "-c", _CHILD, memory], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                             env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        return self._process

    def stop(self) -> None:
        """Stop the child (a later evaluation starts another)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


def _memory_message() -> str:
    return (f"did it need more than {limits.JSONNET_BYTES.value():,} bytes of memory? (the limit; "
            f"{limits.JSONNET_BYTES.env} changes it)")


_child = JsonnetChild()


def evaluate(path: str, text: str, context: dict[str, Any]) -> Any:
    """A Jsonnet template's value, with the context's values as external code variables."""
    codes = {key: json.dumps(value, default=str) for key, value in context.items()}
    return json.loads(_child.evaluate(path, text, codes))
