"""Run by the Python of .venv-kfp (protobuf 6, kfp-pipeline-spec, kfp-kubernetes' protos), not by pytest:
parses each document of stdin (a JSON list of ``[message, document]``) into that message of the KFP
protos as the backend does (unknown fields are an error, as Go's protojson makes them) and prints,
per document, ``{"ok": <the message back as JSON>}`` or ``{"error": "..."}``.

Messages: PipelineSpec, PlatformSpec, ExecutorInput, ExecutorOutput (kfp.pipeline_spec) and
KubernetesExecutorConfig (kfp-kubernetes; loaded from its file: its package imports the kfp SDK).
"""

import importlib.util
import json
import sys
import sysconfig
from pathlib import Path

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2


def _kubernetes_protos():
    path = Path(sysconfig.get_paths()["purelib"], "kfp", "kubernetes", "kubernetes_executor_config_pb2.py")
    spec = importlib.util.spec_from_file_location("kubernetes_executor_config_pb2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MESSAGES = {"PipelineSpec": pipeline_spec_pb2.PipelineSpec, "PlatformSpec": pipeline_spec_pb2.PlatformSpec,
            "ExecutorInput": pipeline_spec_pb2.ExecutorInput, "ExecutorOutput": pipeline_spec_pb2.ExecutorOutput,
            "KubernetesExecutorConfig": _kubernetes_protos().KubernetesExecutorConfig}


def parse(message: str, document: dict) -> dict:
    try:
        parsed = json_format.ParseDict(document, MESSAGES[message]())
    except json_format.ParseError as e:
        return {"error": str(e)}
    return {"ok": json_format.MessageToDict(parsed)}


if __name__ == "__main__":
    print(json.dumps([parse(message, document) for message, document in json.load(sys.stdin)]))
