"""A post-processor written for the original Kubebench (the contract of its tf-cnn example): read
``$KUBEBENCH_EXP_OUTPUT_PATH/worker0.log``, take the first line starting with each known key (after
the log prefix), and write them to ``$KUBEBENCH_EXP_RESULT_PATH/result.json`` as strings, keys
lower-cased with ``_`` for spaces. kubebench runs it unchanged (``postprocess: {kind: command}``)
and turns the numeric strings into metrics.
"""

import json
import os

RESULT_KEYS = ["total images/sec", "TensorFlow", "Model", "Dataset", "Mode", "Batch size",
               "Num batches", "Data format", "Optimizer", "Variables", "Sync"]


def run():
    output_dir = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH")
    result_dir = os.environ.get("KUBEBENCH_EXP_RESULT_PATH")
    if not os.path.exists(result_dir):
        os.makedirs(result_dir)
    result = {}
    with open(os.path.join(output_dir, "worker0.log")) as f:
        for line in f:
            message = line.split("|", 4)[-1].lstrip()
            for key in RESULT_KEYS:
                name = key.lower().replace(" ", "_")
                if name not in result and message.startswith(key + ":"):
                    result[name] = message.split(key + ":", 1)[1].strip()
                    break
    with open(os.path.join(result_dir, "result.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    run()
