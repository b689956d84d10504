"""deploy/kubeflow: the manifests validate against the Kubeflow CRDs (../shared/fixtures/kubeflow,
their openAPIV3Schema as JSON Schema), read the server URL and token from the Secret, and name
the image's entrypoint; the same entrypoint, run here with the environment the training
operator sets (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) in two processes, or under torchrun
as the Trainer v2 runtime starts it, trains data-parallel against a real server with a token."""
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

import yaml

from harness import BIN, Server

try:
    import jsonschema
except ImportError:  # python3-jsonschema (scripts/install-deps.sh)
    jsonschema = None
try:
    import sklearn  # noqa: F401
    import torch  # noqa: F401
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
DEPLOY = os.path.join(ROOT, "deploy", "kubeflow")
CRDS = os.environ.get("BSO_KUBEFLOW_CRDS",
                      os.path.join(ROOT, "..", "shared", "fixtures", "kubeflow"))
CRD_FILES = ["kubeflow.org_pytorchjobs.yaml", "trainer.kubeflow.org_trainjobs.yaml",
             "trainer.kubeflow.org_clustertrainingruntimes.yaml"]
IMAGE_SCRIPT = "/opt/bso/examples/digits/train.py"  # where the Dockerfile puts the example
LOCAL_SCRIPT = os.path.join(ROOT, "examples", "digits", "train.py")


def manifests():
    """{file name: [documents]} of deploy/kubeflow."""
    out = {}
    for name in sorted(os.listdir(DEPLOY)):
        if name.endswith(".yaml"):
            with open(os.path.join(DEPLOY, name)) as f:
                out[name] = [d for d in yaml.safe_load_all(f) if d]
    return out


def schemas():
    """{(apiVersion, kind): openAPIV3Schema} of the CRDs."""
    out = {}
    for name in CRD_FILES:
        with open(os.path.join(CRDS, name)) as f:
            crd = yaml.safe_load(f)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            out[("%s/%s" % (group, v["name"]), kind)] = v["schema"]["openAPIV3Schema"]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(jsonschema is not None, "python3-jsonschema is not installed")
@unittest.skipUnless(os.path.isdir(CRDS), "the Kubeflow CRDs are not beside the repository")
class Manifests(unittest.TestCase):
    def validator(self, doc):
        schema = schemas().get((doc["apiVersion"], doc["kind"]))
        self.assertIsNotNone(schema, "no CRD for %s %s" % (doc["apiVersion"], doc["kind"]))
        return jsonschema.Draft7Validator(schema)

    def test_every_resource_matches_its_crd(self):
        kinds = []
        for name, docs in manifests().items():
            for doc in docs:
                kinds.append(doc["kind"])
                if doc["kind"] == "Secret":
                    continue
                errors = sorted(self.validator(doc).iter_errors(doc), key=str)
                self.assertEqual([], ["%s: %s at %s" % (name, e.message, list(e.path))
                                      for e in errors])
        self.assertEqual(sorted(kinds), ["ClusterTrainingRuntime", "PyTorchJob", "PyTorchJob",
                                         "Secret", "TrainJob"])

    def test_the_validation_catches_mistakes(self):
        job = manifests()["pytorchjob-ddp.yaml"][0]
        v = self.validator(job)
        for path, bad in ((["spec", "pytorchReplicaSpecs", "Master", "replicas"], "two"),
                          (["spec", "runPolicy", "backoffLimit"], [0]),
                          (["spec", "pytorchReplicaSpecs", "Worker", "template", "spec",
                            "containers", 0, "env", 0, "valueFrom", "secretKeyRef"], "x")):
            broken = copy.deepcopy(job)
            node = broken
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bad
            with self.subTest(path=path):
                self.assertTrue(list(v.iter_errors(broken)))

    def test_pods_read_the_secret_and_run_the_images_entrypoint(self):
        docs = manifests()
        secret = docs["secret.yaml"][0]
        keys = set(secret["stringData"])
        self.assertEqual(keys, {"BSO_SERVER_URL", "BSO_TOKEN"})
        containers = []
        for job in docs["pytorchjob-single.yaml"] + docs["pytorchjob-ddp.yaml"]:
            for replica in job["spec"]["pytorchReplicaSpecs"].values():
                containers += replica["template"]["spec"]["containers"]
        containers.append(docs["trainjob.yaml"][0]["spec"]["trainer"])
        for c in containers:
            refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"]}
            self.assertEqual({n: (r["name"], r["key"]) for n, r in refs.items()},
                             {k: ("bso-client", k) for k in keys})
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            dockerfile = f.read()
        self.assertIn('ENTRYPOINT ["python3", "%s"]' % IMAGE_SCRIPT, dockerfile)
        self.assertIn("COPY examples /opt/bso/examples", dockerfile)
        runtime = docs["runtime.yaml"][0]
        node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
        command = node["template"]["spec"]["template"]["spec"]["containers"][0]["command"]
        self.assertEqual(command, ["torchrun", IMAGE_SCRIPT])
        self.assertEqual(docs["trainjob.yaml"][0]["spec"]["runtimeRef"]["name"],
                         runtime["metadata"]["name"])


@unittest.skipIf(torch is None, "python3-torch and python3-sklearn are not installed")
class Entrypoint(unittest.TestCase):
    def setUp(self):
        self.srv = Server().__enter__()
        self.addCleanup(self.srv.__exit__, None, None, None)
        out = subprocess.run([BIN, "token", "create", "--tenant", "training", "--database",
                              self.srv.database], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        # What the Secret gives every pod, pointing at this server.
        self.env = dict(os.environ, BSO_SERVER_URL="http://127.0.0.1:%d" % self.srv.port,
                        BSO_TOKEN=out.stdout.strip(), BSO_ASSUMED_POWER_W="65",
                        PYTHONPATH=os.path.join(ROOT, "python"), PYTHONUNBUFFERED="1")
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            self.env.pop(k, None)

    def check_run(self, job_id, procs):
        lines = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            self.assertIn(p.returncode, (0, 3), out + err)
            lines += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        self.assertEqual(sorted(l["rank"] for l in lines), [0, 1])
        self.assertEqual(len({(l["batch_size"], l["trial"]) for l in lines}), 1, lines)
        trial = self.srv.request("GET", "/jobs/%s/trials" % job_id,
                                 headers={"Authorization": "Bearer " + self.env["BSO_TOKEN"]})[1]
        self.assertEqual([t["status"] for t in trial["trials"]], ["Succeeded"])
        self.assertEqual(trial["trials"][0]["batch_size"], lines[0]["batch_size"])

    def test_as_the_training_operator_starts_the_pods(self):
        job = manifests()["pytorchjob-ddp.yaml"][0]
        port = str(free_port())
        procs = []
        for rank, role in enumerate(("Master", "Worker")):
            container = job["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"][
                "containers"][0]
            env = dict(self.env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2",
                       RANK=str(rank))
            procs.append(subprocess.Popen([sys.executable, LOCAL_SCRIPT] + container["args"],
                                          env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        self.check_run(container["args"][container["args"].index("--job-id") + 1], procs)

    @unittest.skipUnless(shutil.which("torchrun"), "torchrun is not installed")
    def test_as_the_trainer_runtime_starts_it(self):
        trainer = manifests()["trainjob.yaml"][0]["spec"]["trainer"]
        self.assertEqual(trainer["command"], ["torchrun", IMAGE_SCRIPT])
        # torchrun's agent makes a torchelastic_* directory in TMPDIR and leaves it behind:
        # here, one that goes with the test.
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        probe = subprocess.run([shutil.which("torchrun"), "--nproc_per_node", "1", "-m",
                                "platform"], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, TMPDIR=scratch.name))
        if probe.returncode != 0:  # Debian 12's torch 1.13 torchrun fails under Python 3.11
            self.skipTest("this torchrun cannot start processes: " +
                          probe.stderr.strip().splitlines()[-1])
        cmd = [shutil.which("torchrun"), "--nnodes", "1", "--nproc_per_node", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), LOCAL_SCRIPT]
        p = subprocess.Popen(cmd + trainer["args"], env=dict(self.env, TMPDIR=scratch.name),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.check_run(trainer["args"][trainer["args"].index("--job-id") + 1], [p])


if __name__ == "__main__":
    unittest.main()
