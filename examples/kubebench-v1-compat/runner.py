"""A job runner written the way the original Kubebench's examples were (its tf-cnn ``runner.py``):
it runs the benchmark, logs every line as ``LEVEL|time|file|line| message`` into a log named after
the replica in ``TF_CONFIG`` (``worker0.log`` when there is none), and copies that log into
``$KUBEBENCH_EXP_OUTPUT_PATH``. Nothing in it knows about the new kubebench.

    python runner.py [benchmark arguments…]
"""

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile


def replica_name():
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
    return "{}{}".format(task.get("type") or "worker", task.get("index", 0))


def main():
    output_dir = os.environ["KUBEBENCH_EXP_OUTPUT_PATH"]
    os.makedirs(output_dir, exist_ok=True)
    log_file = os.path.join(tempfile.mkdtemp(), replica_name() + ".log")
    logging.basicConfig(level=logging.INFO, filename=log_file, filemode="w",
                        format="%(levelname)s|%(asctime)s|%(pathname)s|%(lineno)d| %(message)s",
                        datefmt="%Y-%m-%dT%H:%M:%S")
    # The benchmark this runner wraps (tf_cnn_benchmarks.py in the original).
    command = [sys.executable, "-m", "kubebench.workloads.cnn"] + sys.argv[1:]
    logging.info("Command to run: %s", " ".join(command))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        print(line, end="", flush=True)
        logging.info(line.rstrip("\n"))
    code = process.wait()
    logging.info("Finished with exit code %d", code)
    shutil.copy(log_file, output_dir)
    sys.exit(code)


if __name__ == "__main__":
    main()
