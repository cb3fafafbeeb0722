"""Real workloads that kubebench ships for demos and tests (run as ``python -m kubebench.workloads.<name>``):
``cnn`` (PyTorch), ``tf_cnn`` (TensorFlow), ``inference`` (LoadGen scenarios), ``mlperf_cnn``
(time to accuracy, MLPerf logs) and ``data`` (datasets for them). This package imports nothing heavy.
"""

import sys


def _whole_lines(stream: object) -> None:
    """Hand each line of ``stream`` to the OS in one write.

    The processes of a replica (torchrun's ranks) share one log, and kubebench runs them unbuffered
    (``PYTHONUNBUFFERED``): ``print`` then writes each of its parts and its newline on their own, and
    another rank's line can land inside this one. Line buffering without write-through keeps a line's
    parts until its newline, so every line reaches the log whole, as soon as it ends.
    """
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(line_buffering=True, write_through=False)
        except (ValueError, OSError):  # a detached or closed stream: leave it as it is
            pass


_whole_lines(sys.stdout)
