"""The deployment files (deploy/): there is no container engine or cluster here, so they are
parsed and checked against the real binary: valid YAML, every BSO_ variable one that bso-server
knows, one port everywhere, probes and the migration command that work, the binaries the
Dockerfile copies built under those names, and its packages real Debian 12 packages."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

import harness
from harness import Server

DEPLOY = os.path.join(os.path.dirname(__file__), "..", "..", "deploy")


def read(*path):
    with open(os.path.join(DEPLOY, *path)) as f:
        return f.read()


def manifests():
    """Every YAML document under deploy/ that runs bso-server, with the file it came from
    (deploy/kubeflow runs training clients, whose BSO_ variables are libbso's: test_kubeflow)."""
    docs = []
    for root, _, files in os.walk(DEPLOY):
        if os.path.basename(root) == "kubeflow":
            continue
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                with open(os.path.join(root, name)) as f:
                    docs += [(name, d) for d in yaml.safe_load_all(f) if d is not None]
    return docs


def env_names(node):
    """BSO_ variable names set anywhere in a parsed document."""
    found = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and k.startswith("BSO_"):
                found.add(k)
            if k == "name" and isinstance(v, str) and v.startswith("BSO_"):
                found.add(v)
            found |= env_names(v)
    elif isinstance(node, list):
        for v in node:
            found |= env_names(v)
    return found


class Deploy(unittest.TestCase):
    def test_yaml_and_variables(self):
        docs = manifests()
        kinds = {d.get("kind") for _, d in docs}
        self.assertTrue({"Deployment", "Service", "Secret", "Job"} <= kinds, kinds)
        names = set()
        for _, d in docs:
            names |= env_names(d)
        names |= set(re.findall(r"\b(BSO_[A-Z_]+)=", read("Dockerfile")))
        self.assertIn("BSO_DATABASE_URL", names)
        help_text = subprocess.run([harness.BIN, "--help"], capture_output=True,
                                   text=True).stdout
        for n in sorted(names):
            self.assertIn(n, help_text, "%s is not a bso-server setting" % n)

    def test_one_port_and_working_probes(self):
        docker = read("Dockerfile")
        port = int(re.search(r"^EXPOSE (\d+)", docker, re.M).group(1))
        self.assertIn("BSO_PORT=%d" % port, docker)
        self.assertIn("127.0.0.1:%d/healthz" % port, docker)
        nginx = read("nginx.conf")
        self.assertIn("listen %d;" % port, nginx)
        self.assertEqual(set(re.findall(r"server bso-\d:(\d+)", nginx)), {str(port)})
        paths = set()
        for _, d in manifests():
            if d.get("kind") != "Deployment":
                continue
            c = d["spec"]["template"]["spec"]["containers"][0]
            self.assertEqual(c["ports"][0]["containerPort"], port)
            env = {e["name"]: e.get("value") for e in c["env"]}
            self.assertEqual(env["BSO_PORT"], str(port))
            paths |= {c["readinessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["path"]}
        self.assertEqual(paths, {"/readyz", "/healthz"})
        with Server() as srv:
            for p in paths:
                self.assertEqual(srv.request("GET", p)[0], 200, p)

    def test_compose(self):
        compose = yaml.safe_load(read("compose.yaml"))
        services = compose["services"]
        self.assertTrue({"postgres", "migrate", "bso-1", "bso-2", "lb"} <= set(services))
        pg = services["postgres"]["environment"]
        url = "postgresql://%s:%s@postgres:5432/%s" % (pg["POSTGRES_USER"],
                                                       pg["POSTGRES_PASSWORD"], pg["POSTGRES_DB"])
        for name in ("migrate", "bso-1", "bso-2"):
            self.assertEqual(services[name]["environment"]["BSO_DATABASE_URL"], url, name)
        self.assertEqual(services["migrate"]["command"], ["migrate"])
        self.assertEqual(services["bso-1"]["depends_on"]["migrate"]["condition"],
                         "service_completed_successfully")

    def test_migration_command_and_binaries(self):
        for _, d in manifests():
            if d.get("kind") == "Job":
                args = d["spec"]["template"]["spec"]["containers"][0]["args"]
                with tempfile.TemporaryDirectory() as tmp:
                    out = subprocess.run([harness.BIN] + args + ["--database",
                                         "sqlite:///%s/m.db" % tmp], capture_output=True,
                                         text=True)
                    self.assertEqual(out.returncode, 0, out.stderr)
        built = os.path.dirname(os.path.abspath(harness.BIN))
        copied = re.findall(r"/src/build/release/(\S+)", read("Dockerfile"))
        self.assertIn("bso-server", copied)
        for name in copied:
            self.assertTrue(os.path.exists(os.path.join(built, name)), name)

    @unittest.skipUnless(shutil.which("apt-cache"), "no apt-cache")
    def test_debian_packages_exist(self):
        docker = read("Dockerfile")
        packages = set()
        for block in re.findall(r"--no-install-recommends \\\n(.*?)(?:&&|$)", docker, re.S):
            packages |= {p for p in block.replace("\\", " ").split() if not p.startswith("-")}
        self.assertTrue({"libpq5", "libpq-dev", "libmicrohttpd12"} <= packages, packages)
        for p in sorted(packages):
            out = subprocess.run(["apt-cache", "show", p], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, "%s is not a Debian package here" % p)


class Bundle(unittest.TestCase):
    """tools/bundle-binaries.sh: the binaries with their libraries, for a machine without this
    build's packages (the GPU checks)."""

    TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bundle-binaries.sh")

    def run_bundled(self, dest, path_prefix, command):
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        env["PATH"] = path_prefix + os.pathsep + env["PATH"]
        return subprocess.run(["bash", "-c", 'source "$0/env.sh" && ' + command, dest],
                              env=env, capture_output=True, text=True, timeout=60)

    def test_bundle_runs_with_only_the_missing_libraries(self):
        build = os.path.dirname(os.path.abspath(harness.BIN))
        with tempfile.TemporaryDirectory() as tmp:
            dest = os.path.join(tmp, "bundle")
            out = subprocess.run([self.TOOL, build, dest], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(sorted(os.listdir(os.path.join(dest, "bin"))),
                             ["bso", "bso-server", "libbso.so", "libbso.so.0"])
            libs = os.listdir(os.path.join(dest, "lib"))
            self.assertIn("libjansson.so.4", libs)
            self.assertIn("libmicrohttpd.so.12", libs)
            self.assertFalse([l for l in libs if l.startswith(("libc.so", "ld-linux"))], libs)
            # This machine has every library: none is put on the path, the system's serve.
            out = self.run_bundled(dest, "/nonexistent", 'ldd "$0/bin/bso-server"')
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(os.listdir(os.path.join(dest, "missing")), [])
            self.assertNotIn(os.path.join(dest, "missing"), out.stdout)
            # A machine that has none of them (an ldconfig that lists nothing): each is linked
            # from the bundle, and the programs run on those.
            fake = os.path.join(tmp, "fakebin")
            os.mkdir(fake)
            with open(os.path.join(fake, "ldconfig"), "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(os.path.join(fake, "ldconfig"), 0o755)
            db = "sqlite:///" + os.path.join(tmp, "bso.db")
            out = self.run_bundled(dest, fake, 'ldd "$0/bin/bso-server" && '
                                   '"$0/bin/bso-server" migrate --database ' + db +
                                   ' && "$0/bin/bso" help')
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(sorted(os.listdir(os.path.join(dest, "missing"))), sorted(libs))
            self.assertRegex(out.stdout, r"libjansson\.so\.4 => \S*/bundle/missing/libjansson")
            self.assertTrue(os.path.exists(os.path.join(tmp, "bso.db")))

    def test_bad_arguments(self):
        out = subprocess.run([self.TOOL], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage", out.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([self.TOOL, tmp, os.path.join(tmp, "b")], capture_output=True,
                                 text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("not found (build first)", out.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "b")))


if __name__ == "__main__":
    unittest.main()
