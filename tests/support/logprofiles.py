"""CRE's LogProfiles as its Helm chart ships them (their patterns verbatim), and the historical NeMo 2 one its
parser's golden cases use, as LogProfile objects."""

from __future__ import annotations

from typing import Any

MEGATRON_STEP = (r"\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\]\s+iteration\s+(?P<iteration>\d+)/"
                 r"\s*\d+\s*\|.*elapsed time per iteration \(ms\):\s*(?P<elapsedTime>[\d.]+)\s*\|.*throughput per "
                 r"GPU \(TFLOP/s/GPU\):\s*(?P<tflops>[\d.]+)\s*\|.*lm loss:\s*(?P<loss>[\d.eE+\-]+)")
MEGATRON_SAVE = (r"\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\]\s+saving checkpoint at "
                 r"iteration\s+(?P<step>\d+)\s+to\s+(?P<path>\S+)")
MEGATRON_DONE = (r"\[(?P<timestamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\]\s+scheduled an async checkpoint "
                 r"save at iteration\s+(?P<step>\d+)\s+to\s+(?P<path>\S+)")
MEGATRON_START = (r"using world size: \d+, data-parallel size: \d+, context-parallel size: \d+,.* "
                  r"tensor-model-parallel size: \d+, pipeline-model-parallel size: \d+")
NEMO_STEP = (r"Training epoch (?P<epoch>\d+), iteration\s+(?P<iteration>\d+)/\d+.*global_step:\s*(?P<globalStep>\d+)"
             r".*reduced_train_loss:\s*(?P<loss>[\d.]+)\s*\|\s*train_step_timing in s:\s*(?P<stepTiming>[\d.]+)"
             r"(?:.*TFLOPS_per_GPU:\s*(?P<tflops>[\d.eE+\-]+))?")
NCCL_RESULT = (r"^\s*(?P<size>\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+(?P<algBW>[\d.]+)\s+(?P<busBW>[\d.]+)")
NCCL_EXAMPLE = ("           8             2     float     sum      -1    58.31    0.00    0.00       0    58.40    0.00"
                "    0.00       0")


def profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "LogProfile", "metadata": {"name": name},
            "spec": spec}


def megatron_training() -> dict[str, Any]:
    return profile("megatron-training", {
        "timestamp": {"layout": "2006-01-02 15:04:05.999999"}, "warmupSteps": 10, "logInterval": 10,
        "workerStrategy": {"type": "Multi", "lifecyclePod": "first", "trainingStepPod": "last"},
        "patterns": {"trainingStep": {"regex": MEGATRON_STEP, "units": {"elapsedTime": "ms"}},
                     "checkpointSave": {"regex": MEGATRON_SAVE}, "checkpointDone": {"regex": MEGATRON_DONE},
                     "checkpointRestore": {"regex": r"Loading checkpoint from (?P<path>\S+)"},
                     "applicationStart": {"regex": MEGATRON_START}}})


def nemo_4_training() -> dict[str, Any]:
    return profile("nemo-4-training", {
        "timestamp": {"layout": "2006-01-02T15:04:05.999999999Z"}, "warmupSteps": 1,
        "patterns": {"trainingStep": {"regex": NEMO_STEP},
                     "checkpointSave": {"regex": r"Global Checkpoint Save\s*:\s*Rank:\s*\d+\s*:\s*Iteration:\s*"
                                                 r"(?P<step>\d+)\s*:.*Save duration:\s*(?P<saveDuration>[\d.]+)s"},
                     "checkpointDone": {"regex": r"Successfully saved checkpoint from iteration\s+(?P<step>\d+)\s+to"
                                                 r"\s+(?P<path>\S+)"},
                     "checkpointRestore": {"regex": r"Restoring model weights from (?P<path>\S+)"},
                     "applicationStart": {"regex": r"\[NeMo \w .* nemo_logging:\d+\]"}}})


def nccl_bandwidth() -> dict[str, Any]:
    return profile("nccl-bandwidth", {
        "timestamp": {"layout": "2006-01-02T15:04:05.999999999Z"},
        "workerStrategy": {"type": "Single", "replicatedJobName": "launcher"},
        "patterns": {"bandwidthResult": {"regex": NCCL_RESULT, "example": NCCL_EXAMPLE},
                     "networkTransport": {"regex": r"NCCL INFO Using network (?P<transport>.+)",
                                          "example": "NCCL INFO Using network Socket"}}})
