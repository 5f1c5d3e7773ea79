"""The export's fixtures, made once for the folder (its modules run on one worker, xdist_group "export"): a short
reference run with a generation after every step, a verification's folder made of it, and an S3 server on
localhost (moto's), a fresh bucket for each test."""

import json
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from resumeproof.common import fingerprint
from resumeproof.common.protocol import CHECKPOINT, CONTINUOUS, INTERRUPTED, PROTOCOL, SUMMARY
from tests.helpers import TRAIN, run_train

STEPS = 3  # the run's final step: generations step_000001.pt to step_000003.pt, and checkpoint.pt at 3


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """`train.py --steps 3 --checkpoint-every 1`: checkpoint.pt, three generations, summary.json, loss.jsonl."""
    out = tmp_path_factory.mktemp("export") / "run"
    proc = run_train("--steps", str(STEPS), "--output", out, "--checkpoint-every", "1")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def verification_dir(run_dir, tmp_path_factory) -> Path:
    """A verification's folder as `resumeproof verify --steps 3 --interrupt-at 2` leaves it, made of the run: the
    continuous summary, and the interrupted checkpoint at step 2 (the run's generation, whose next update the
    continuous history holds)."""
    out = tmp_path_factory.mktemp("export") / "verification"
    (out / CONTINUOUS).mkdir(parents=True)
    (out / INTERRUPTED).mkdir()
    shutil.copyfile(run_dir / SUMMARY, out / CONTINUOUS / SUMMARY)
    interrupted = out / INTERRUPTED / CHECKPOINT
    shutil.copyfile(run_dir / "step_000002.pt", interrupted)
    fingerprint.write_sidecar(interrupted, fingerprint.sha256_file(interrupted))
    document = {"protocol": PROTOCOL, "train_cmd": f"{sys.executable} -B {TRAIN}", "steps": STEPS, "interrupt_at": [2]}
    (out / "verification.json").write_text(json.dumps(document))
    return out


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def aws(s3_server) -> Iterator[dict[str, str]]:
    """The variables that point s3:// at the server, set for the module and passed to the processes it starts."""
    env = {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        yield env


def new_bucket() -> str:
    """A fresh, empty bucket on the server (the AWS variables set): its URL, s3://NAME."""
    import fsspec

    name = f"export-{uuid.uuid4().hex[:12]}"
    fs, _ = fsspec.url_to_fs(f"s3://{name}")
    fs.mkdir(name)
    return f"s3://{name}"


@pytest.fixture
def bucket(aws) -> str:
    return new_bucket()
