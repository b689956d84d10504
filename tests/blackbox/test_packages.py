"""Packages: `cmake --install` into a temporary root (server, CLI, library, headers, bso.pc, the
systemd unit) and the server, the CLI and a C program built with pkg-config running from there;
the .deb that `cpack -G DEB` makes, unpacked and run the same way; and `pip install ./python`
offline into a fresh virtual environment, after which `import bso` works with no environment
variable."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.dirname(os.path.abspath(harness.BIN)) if os.path.isabs(harness.BIN) else None

C_PROGRAM = r"""
#include <stdio.h>
#include <bso/client.h>
int main(int argc, char **argv) {
    bso_client *c;
    if (argc < 2 || bso_client_new(argv[1], &c) != 0) return 2;
    int rc = bso_client_get(c, "/healthz");
    printf("%d %d %s\n", rc, bso_client_http_status(c), bso_client_body(c));
    bso_client_free(c);
    return rc == 0 ? 0 : 1;
}
"""


def plain_env(**extra):
    """The environment without the test's variables (library paths, sanitizer preloads)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BSO_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH",
                                                      "PYTHONPATH")}
    env.update(extra)
    return env


def sanitizer_env(env):
    """Programs not built with the sanitizers that load a sanitized libbso need its runtimes
    first (the ASan build's tests)."""
    runtimes = os.environ.get("BSO_SANITIZER_RUNTIMES", "").strip()
    if runtimes:
        env = dict(env, LD_PRELOAD=runtimes, ASAN_OPTIONS="detect_leaks=0")
    return env


@unittest.skipUnless(BUILD and os.path.exists(os.path.join(BUILD, "CMakeCache.txt")),
                     "BSO_SERVER_BIN does not point into a CMake build directory")
class Packages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def serve_from(self, prefix):
        """bso-server from prefix/bin on a fresh SQLite file, and the CLI against it."""
        old = harness.BIN
        harness.BIN = os.path.join(prefix, "bin", "bso-server")
        try:
            srv = Server(database="sqlite:///%s/served.db" % self.tmp.name).__enter__()
        finally:
            harness.BIN = old
        self.addCleanup(srv.__exit__, None, None, None)
        url = "http://127.0.0.1:%d" % srv.port
        self.assertEqual(srv.request("GET", "/healthz")[0], 200)
        env = plain_env(LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
        out = subprocess.run([os.path.join(prefix, "bin", "bso"), "--server", url, "jobs"],
                             capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return url

    def test_cmake_install_into_a_temporary_root(self):
        prefix = os.path.join(self.tmp.name, "usr")
        out = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        for path in ("bin/bso-server", "bin/bso", "bin/bso-sim", "bin/bso-bench",
                     "lib/libbso.so.0", "include/bso/client.h", "lib/pkgconfig/bso.pc",
                     "lib/systemd/system/bso-server.service"):
            self.assertTrue(os.path.exists(os.path.join(prefix, path)), path)
        url = self.serve_from(prefix)
        # A C program built against the installed headers and library through bso.pc.
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "bso"], capture_output=True,
                               text=True, check=True, timeout=60,
                               env=dict(os.environ,
                                        PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig")))
        src = os.path.join(self.tmp.name, "health.c")
        with open(src, "w") as f:
            f.write(C_PROGRAM)
        exe = os.path.join(self.tmp.name, "health")
        subprocess.run(["cc", src, "-o", exe] + flags.stdout.split(), check=True, timeout=120)
        env = sanitizer_env(plain_env(LD_LIBRARY_PATH=os.path.join(prefix, "lib")))
        out = subprocess.run([exe, url], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertTrue(out.stdout.startswith("0 200 "), out.stdout)

    @unittest.skipUnless(shutil.which("cpack") and shutil.which("dpkg-deb"),
                         "cpack or dpkg-deb is missing")
    def test_deb(self):
        out = subprocess.run(["cpack", "-G", "DEB", "-B", self.tmp.name], cwd=BUILD,
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        debs = [f for f in os.listdir(self.tmp.name) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, os.listdir(self.tmp.name))
        deb = os.path.join(self.tmp.name, debs[0])
        info = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True,
                              check=True, timeout=60).stdout
        self.assertIn("Package: bso", info)
        self.assertIn("Depends: libjansson4, libmicrohttpd12, libsqlite3-0, libpq5, libcurl4",
                      info)
        root = os.path.join(self.tmp.name, "root")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True, timeout=60)
        control = os.path.join(self.tmp.name, "control")
        subprocess.run(["dpkg-deb", "-e", deb, control], check=True, timeout=60)
        postinst = os.path.join(control, "postinst")
        self.assertTrue(os.access(postinst, os.X_OK))
        self.assertEqual(subprocess.run(["sh", "-n", postinst], timeout=60).returncode, 0)
        with open(postinst) as f:
            self.assertIn("adduser --system --group --home /var/lib/bso", f.read())
        with open(os.path.join(root, "usr", "lib", "systemd", "system",
                               "bso-server.service")) as f:
            unit = f.read()
        for line in ("User=bso", "StateDirectory=bso", "WorkingDirectory=/var/lib/bso",
                     "ExecStart=/usr/bin/bso-server serve",
                     "Environment=BSO_DATABASE_URL=sqlite:////var/lib/bso/bso.db"):
            self.assertIn(line + "\n", unit)
        self.serve_from(os.path.join(root, "usr"))

    def test_pip_install_into_a_fresh_venv(self):
        venv = os.path.join(self.tmp.name, "venv")
        # --system-site-packages: Debian's setuptools and wheel build it offline.
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                       check=True, timeout=120)
        pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                              "--no-build-isolation", os.path.join(ROOT, "python")],
                             capture_output=True, text=True, env=plain_env(), timeout=900)
        self.assertEqual(pip.returncode, 0, pip.stdout[-3000:] + pip.stderr[-3000:])
        with Server() as srv:
            script = ("import bso, os; c = bso.Client('http://127.0.0.1:%d'); "
                      "print(c.get('/healthz')['status'], "
                      "os.path.dirname(bso.__file__) == os.path.dirname(bso._native._find()[0]))"
                      % srv.port)
            out = subprocess.run([os.path.join(venv, "bin", "python"), "-c", script],
                                 capture_output=True, text=True, cwd=self.tmp.name,
                                 env={"PATH": "/usr/bin:/bin"}, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["ok", "True"])


if __name__ == "__main__":
    unittest.main()
