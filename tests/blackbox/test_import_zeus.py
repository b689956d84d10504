"""bso-server import-zeus against a database written by Zeus's own server
(../shared/fixtures/zeus): every later answer is Zeus's (expected.txt); the import is
idempotent, refuses to overwrite a job that differs unless told, changes nothing with
--dry-run, and refuses what is not a Zeus database, a newer schema or rows that break Zeus's
invariants, writing nothing. Under the PostgreSQL suite the target is PostgreSQL, and the same
fixture is also read from a PostgreSQL copy."""
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from harness import BIN, PG_URL, Server, fresh_database

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get("BSO_ZEUS_FIXTURES",
                          os.path.join(HERE, "..", "..", "..", "shared", "fixtures", "zeus"))
SOURCE = os.path.join(FIXTURES, "zeus-bso.sqlite")
MYSQL_SERVER = os.path.join(HERE, "..", "..", "scripts", "mysql-server.sh")
COSTS = {8: 9000, 16: 5300, 32: 5000, 64: 5100, 128: 5400, 256: 8000}


def expected():
    """expected.txt: the in-flight trial, then the batch sizes Zeus gave next, per job."""
    out = {}
    with open(os.path.join(FIXTURES, "expected.txt")) as f:
        for line in f:
            head, _, sizes = line.strip().partition(": ")
            job, _, numbers = head.split()[:3]
            if "in flight" in head:
                continue
            first = int(numbers.split("-")[0])
            out[job] = (first, [int(s) for s in sizes.split(",")])
    return out


# Zeus's tables as SQLAlchemy creates them in MySQL (docs of Zeus's schema).
ZEUS_MYSQL_DDL = [
    "CREATE TABLE `Job` (job_id VARCHAR(400) NOT NULL, job_id_prefix VARCHAR(300) NOT NULL,"
    " default_batch_size INTEGER NOT NULL, higher_is_better_metric BOOL NOT NULL,"
    " eta_knob FLOAT NOT NULL, beta_knob FLOAT, target_metric FLOAT NOT NULL,"
    " max_epochs INTEGER NOT NULL, num_pruning_rounds INTEGER NOT NULL,"
    " window_size INTEGER NOT NULL, max_power FLOAT NOT NULL, number_of_gpus INTEGER NOT NULL,"
    " gpu_model VARCHAR(30) NOT NULL, mab_prior_mean FLOAT NOT NULL,"
    " mab_prior_precision FLOAT NOT NULL, mab_num_explorations INTEGER NOT NULL,"
    " mab_seed INTEGER, mab_random_generator_state VARCHAR(10000),"
    " exp_default_batch_size INTEGER NOT NULL, stage ENUM('Pruning','MAB') NOT NULL,"
    " min_cost FLOAT, min_cost_batch_size INTEGER NOT NULL, PRIMARY KEY (job_id));",
    "CREATE TABLE `BatchSize` (job_id VARCHAR(400) NOT NULL, batch_size INTEGER NOT NULL,"
    " PRIMARY KEY (job_id, batch_size),"
    " FOREIGN KEY(job_id) REFERENCES `Job` (job_id) ON DELETE CASCADE);",
    "CREATE TABLE `GaussianTsArmState` (job_id VARCHAR(300) NOT NULL,"
    " batch_size INTEGER NOT NULL, param_mean FLOAT NOT NULL, param_precision FLOAT NOT NULL,"
    " reward_precision FLOAT NOT NULL, num_observations INTEGER NOT NULL,"
    " PRIMARY KEY (job_id, batch_size));",
    "CREATE TABLE `Trial` (job_id VARCHAR(300) NOT NULL, batch_size INTEGER NOT NULL,"
    " trial_number INTEGER NOT NULL, start_timestamp DATETIME NOT NULL,"
    " type ENUM('Exploration','Concurrent','MAB') NOT NULL,"
    " status ENUM('Dispatched','Succeeded','Failed') NOT NULL, end_timestamp DATETIME,"
    " time FLOAT, energy FLOAT, converged BOOL, PRIMARY KEY (job_id, trial_number));",
]


def inserts(boolean, quote='"'):
    """The fixture's rows as INSERT statements (boolean(v) writes a boolean column; table
    names quoted with `quote`)."""
    script = []
    with sqlite3.connect(SOURCE) as lite:
        for table in ("Job", "BatchSize", "GaussianTsArmState", "Trial"):
            cur = lite.execute('SELECT * FROM "%s"' % table)
            cols = [d[0] for d in cur.description]
            for row in cur:
                vals = []
                for c, v in zip(cols, row):
                    if v is None:
                        vals.append("NULL")
                    elif c in ("higher_is_better_metric", "converged"):
                        vals.append(boolean(bool(v)))
                    elif isinstance(v, str):
                        vals.append("'%s'" % v.replace("'", "''"))
                    else:
                        vals.append(repr(v))
                script.append("INSERT INTO %s%s%s (%s) VALUES (%s);"
                              % (quote, table, quote, ", ".join(cols), ", ".join(vals)))
    return script


def run_import(*args):
    return subprocess.run([BIN, "import-zeus"] + list(args), capture_output=True, text=True,
                          timeout=120)


@unittest.skipUnless(os.path.exists(SOURCE), "the Zeus fixture is not beside the repository")
class ImportZeus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.target = fresh_database(self.tmp.name)

    def copy_source(self):
        path = os.path.join(self.tmp.name, "zeus.sqlite")
        shutil.copy(SOURCE, path)
        os.chmod(path, 0o644)
        return path

    def go_on_as_zeus(self, srv):
        """Ends g-fx-a's trial in flight, then runs 15 trials of each job as the fixture's
        client did; returns {job: (first trial number, batch sizes)}."""
        status, trials = srv.request("GET", "/jobs/g-fx-a/trials")
        last = trials["trials"][-1]
        self.assertEqual((last["trial_number"], last["batch_size"], last["status"]),
                         (31, 64, "Dispatched"))
        status, _ = srv.request("PATCH", "/trials", {"job_id": "g-fx-a", "batch_size": 64,
                                                      "trial_number": 31})
        self.assertEqual(status, 200)
        got = {}
        for job in ("g-fx-a", "g-fx-b"):
            sizes, first = [], None
            for _ in range(15):
                status, t = srv.request("GET", "/jobs/batch_size?job_id=" + job)
                self.assertEqual(status, 200, t)
                bs, k = t["batch_size"], t["trial_number"]
                first = first or k
                sizes.append(bs)
                cost = COSTS[bs] + ((k * 37) % 11 - 5) * 150
                status, _ = srv.request("POST", "/report", {
                    "job_id": job, "batch_size": bs, "trial_number": k, "time": cost / 500,
                    "energy": 0, "metric": 0.1 if bs == 8 else 0.9,
                    "current_epoch": 10 if bs == 8 else 1})
                self.assertEqual(status, 200)
            got[job] = (first, sizes)
        return got

    def test_import_then_every_answer_is_zeuss(self):
        source = "sqlite:///" + self.copy_source()
        before = os.path.getmtime(source[len("sqlite:///"):])
        if not PG_URL:  # a server on the SQLite file keeps jobs in memory: no import beside it
            with Server(database=self.target):
                busy = run_import("--from", source, "--database", self.target)
            self.assertEqual(busy.returncode, 1)
            self.assertIn("in use by another bso-server", busy.stderr)
        dry = run_import("--from", source, "--database", self.target, "--dry-run")
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("g-fx-a", dry.stdout)
        self.assertIn("MAB, 31 trials", dry.stdout)
        self.assertIn("dry run, nothing written: Job 2 read: 2 new", dry.stdout)
        with Server(database=self.target) as srv:  # the dry run wrote no job
            self.assertEqual(srv.request("GET", "/jobs")[1]["jobs"], [])
        out = run_import("--from", source, "--database", self.target)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("imported: Job 2 read: 2 new, 0 replaced, 0 already here; BatchSize 12, "
                      "Trial 38, GaussianTsArmState 5 read", out.stdout)
        again = run_import("--from", source, "--database", self.target)  # idempotent
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("0 new, 0 replaced, 2 already here", again.stdout)
        self.assertEqual(os.path.getmtime(source[len("sqlite:///"):]), before)  # read only
        with Server(database=self.target) as srv:
            job = srv.request("GET", "/jobs/g-fx-a")[1]
            self.assertEqual((job["stage"], job["spec"]["policy"], job["spec"]["mab_seed"]),
                             ("MAB", "zeus", 42))
            self.assertEqual(len(job["arms"]), 5)
            trial = srv.request("GET", "/jobs/g-fx-a/trials")[1]["trials"][0]
            self.assertEqual(trial["start_timestamp"][:20], "2026-11-24T15:02:01.")
            self.assertEqual(self.go_on_as_zeus(srv), expected())
        # Now the jobs here have gone on: the same import differs and is refused.
        refused = run_import("--from", source, "--database", self.target)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("2 jobs already exist here and differ; nothing was imported",
                      refused.stderr)
        replaced = run_import("--from", source, "--database", self.target, "--replace",
                              "--jobs", "g-fx-b")
        self.assertEqual(replaced.returncode, 0, replaced.stderr)
        self.assertIn("Job 1 read: 0 new, 1 replaced", replaced.stdout)
        with Server(database=self.target) as srv:
            trials = srv.request("GET", "/jobs/g-fx-b/trials")[1]["trials"]
            self.assertEqual(len(trials), 7)
            self.assertEqual(len(srv.request("GET", "/jobs/g-fx-a/trials")[1]["trials"]), 46)

    @unittest.skipUnless(PG_URL, "reading Zeus's PostgreSQL needs the test cluster")
    def test_from_postgresql(self):
        """The same database in PostgreSQL, as Zeus creates it there, imports alike."""
        name = fresh_database(self.tmp.name)
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
        script = []
        with sqlite3.connect(SOURCE) as lite:
            for (sql,) in lite.execute("SELECT sql FROM sqlite_master WHERE type = 'table'"):
                script.append(sql.replace("DATETIME", "TIMESTAMP") + ";")
        script += inserts(lambda v: "TRUE" if v else "FALSE")
        subprocess.run(["psql", name, "-q", "-v", "ON_ERROR_STOP=1"], input="\n".join(script),
                       check=True, capture_output=True, text=True, env=env, timeout=60)
        url = name.replace("postgresql://", "postgresql+asyncpg://", 1)
        out = run_import("--from", url, "--database", self.target)
        self.assertEqual(out.returncode, 0, out.stderr)
        with Server(database=self.target) as srv:
            self.assertEqual(self.go_on_as_zeus(srv), expected())

    @unittest.skipUnless(os.path.exists("/usr/sbin/mariadbd"),
                         "reading Zeus's MySQL needs MariaDB (mariadb-server)")
    def test_from_mysql(self):
        """The same database in MySQL (MariaDB), in the schema SQLAlchemy makes there for Zeus:
        it imports, and the jobs go on as Zeus's did. (MySQL's FLOAT is single precision, as
        Zeus's own MySQL database keeps it, yet close enough here for the same choices.)"""
        where = os.path.join(self.tmp.name, "mysql")
        url = subprocess.run([MYSQL_SERVER, "start", where], capture_output=True, text=True,
                             check=True, timeout=180).stdout.strip()
        self.addCleanup(subprocess.run, [MYSQL_SERVER, "stop", where], timeout=60)
        port = url.rsplit(":", 1)[1]
        script = ["CREATE DATABASE zeus;", "USE zeus;"] + ZEUS_MYSQL_DDL + inserts(
            lambda v: "1" if v else "0", "`")
        subprocess.run(["mariadb", "--no-defaults", "-h127.0.0.1", "-P" + port, "-uroot"],
                       input="\n".join(script), check=True, capture_output=True, text=True,
                       timeout=60)
        out = run_import("--from", "mysql+aiomysql://root@127.0.0.1:%s/zeus" % port,
                         "--database", self.target)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Job 2 read: 2 new", out.stdout)
        with Server(database=self.target) as srv:
            self.assertEqual(self.go_on_as_zeus(srv), expected())

    def test_bad_sources_write_nothing(self):
        path = self.copy_source()

        def broken(sql):
            bad = tempfile.mktemp(suffix=".sqlite", dir=self.tmp.name)
            shutil.copy(path, bad)
            db = sqlite3.connect(bad)
            db.executescript(sql)
            db.commit()
            db.close()
            return "sqlite:///" + bad

        cases = [
            ("sqlite:///" + os.path.join(self.tmp.name, "missing.sqlite"), "cannot open"),
            ("mysql+aiomysql://u:secret@nohost.invalid/zeus",
             "cannot connect to the Zeus database"),
            ("mysql://u@localhost", "a MySQL URL names its database"),
            ("redis://x", "not a database URL"),
            (broken('DROP TABLE "GaussianTsArmState"'), 'no table "GaussianTsArmState"'),
            (broken('ALTER TABLE "Trial" ADD COLUMN epochs INTEGER'),
             'a newer Zeus schema than this import knows: table "Trial" has a column epochs'),
            (broken("UPDATE \"Trial\" SET time = NULL WHERE trial_number = 3 AND "
                    "job_id = 'g-fx-b'"), "job g-fx-b: trial 3 is Succeeded but"),
            (broken("UPDATE \"Job\" SET stage = 'Done' WHERE job_id = 'g-fx-a'"),
             "stage is 'Done'"),
            (broken("UPDATE \"Job\" SET eta_knob = 7 WHERE job_id = 'g-fx-b'"),
             "job g-fx-b: eta_knob"),
            (broken("DELETE FROM \"GaussianTsArmState\" WHERE job_id = 'g-fx-a'"),
             "job g-fx-a: stage MAB with 0 arms"),
            (broken("UPDATE \"Job\" SET mab_random_generator_state = '{\"x\": 1}'"),
             "mab_random_generator_state is not a PCG64 state"),
        ]
        with open(path, "rb") as f:
            text = f.read()
        not_zeus = os.path.join(self.tmp.name, "other.sqlite")
        sqlite3.connect(not_zeus).executescript("CREATE TABLE t (x INTEGER);")
        cases.append(("sqlite:///" + not_zeus, 'not a Zeus BSO database: it has no table "Job"'))
        for url, message in cases:
            with self.subTest(url=url):
                out = run_import("--from", url, "--database", self.target)
                self.assertEqual(out.returncode, 1, out.stdout)
                self.assertIn(message, out.stderr)
                self.assertNotIn("secret", out.stderr)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), text)  # the source is never written
        with Server(database=self.target) as srv:
            self.assertEqual(srv.request("GET", "/jobs")[1]["jobs"], [])
        usage = subprocess.run([BIN, "import-zeus"], capture_output=True, text=True, timeout=60)
        self.assertEqual(usage.returncode, 2)
        self.assertIn("import-zeus needs --from URL", usage.stderr)


if __name__ == "__main__":
    unittest.main()
