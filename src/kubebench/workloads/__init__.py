"""Real workloads that kubebench ships for demos and tests (run as ``python -m kubebench.workloads.<name>``):
``cnn`` (PyTorch), ``tf_cnn`` (TensorFlow), ``inference`` (LoadGen scenarios), ``mlperf_cnn``
(time to accuracy, MLPerf logs) and ``data`` (datasets for them). This package imports nothing heavy.
"""
