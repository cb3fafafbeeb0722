"""Why a job failed, in words that are the same on every backend (pure).

A run's ``reason`` starts with the replica it blames (``worker-0 …``), then one stable phrase:
``exited with code 3``, ``killed by signal SIGSEGV``, ``out of memory (OOMKilled): …``. People
filter and group failures by these phrases, so they change only with the store's schema.
"""

from __future__ import annotations

import re
import signal

#: A process killed by SIGKILL was most often killed by the kernel's (or a cgroup's) OOM killer.
OOM_HINT = "out of memory?"
#: How the last lines of a log name an allocation failure: Python's MemoryError, PyTorch's
#: ``torch.OutOfMemoryError`` (CUDA), TensorFlow's ResourceExhaustedError, C++'s std::bad_alloc.
_OOM_IN_LOG = re.compile(r"(?<![\w.])((?:[A-Za-z_][\w]*\.)*(?:MemoryError|\w*OutOfMemoryError|ResourceExhaustedError)"
                         r"|std::bad_alloc)\b")
_OOM_LOG_LINES = 5
_REPLICA_FAILED = re.compile(r"^(\S+) ((?:exited with code|killed by signal) .*)$", re.DOTALL)


def signal_name(number: int) -> str | None:
    """``SIGSEGV`` for 11; None for a number that is no signal here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def exit_code(returncode: int) -> int:
    """The exit code a shell (and Kubernetes) reports: 128 + n for a process killed by signal n."""
    return 128 - returncode if returncode < 0 else returncode


def exit_reason(returncode: int) -> str:
    """How a process ended, from its return code (negative: killed by that signal, as Popen says).

    A code above 128 is read as the shell's "128 + signal" only as a guess (a program may exit
    with 137 itself), hence the question mark.
    """
    if returncode < 0:
        name = signal_name(-returncode) or str(-returncode)
        hint = f" ({OOM_HINT})" if -returncode == signal.SIGKILL else ""
        return f"killed by signal {name}{hint}"
    guess = signal_name(returncode - 128) if 128 < returncode < 128 + 65 else None
    if guess == "SIGKILL":
        return f"exited with code {returncode} (killed by signal SIGKILL: {OOM_HINT})"
    if guess:
        return f"exited with code {returncode} (killed by signal {guess}?)"
    return f"exited with code {returncode}"


def oom_in_log(tail: str) -> str | None:
    """The allocation error the last lines of a failed replica's log end with (``MemoryError``), if any."""
    for line in reversed(tail.splitlines()[-_OOM_LOG_LINES:]):
        found = _OOM_IN_LOG.search(line)
        if found:
            return found.group(1)
    return None


def with_oom(reason: str, tail: str) -> str:
    """``reason`` of a failed replica rewritten as out of memory when its log ends with an allocation error."""
    matched = _REPLICA_FAILED.match(reason)
    error = oom_in_log(tail) if matched else None
    if not matched or not error:
        return reason
    replica, rest = matched.groups()
    rest = rest.replace(f" (killed by signal SIGKILL: {OOM_HINT})", "").replace(f" ({OOM_HINT})", "")
    return f"{replica} out of memory ({error}): {rest}"
