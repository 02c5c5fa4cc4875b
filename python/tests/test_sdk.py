"""test_sdk.py: agent_sandbox against real local sandboxes (run by the
README's test command: python3 -m unittest discover -s python/tests).

Each test class uses a private ABX_HOME; every sandbox made here is killed
in tearDown, whatever happened. libabx and abx come from ABX_LIBRARY /
ABX_BIN (the build under test), else the checkout's build/.
"""
import asyncio
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
HOME = tempfile.mkdtemp(prefix="abx-py-")
os.environ["ABX_HOME"] = HOME
os.environ.setdefault("ABX_PROVIDER", "local")
ABX = os.environ.get("ABX_BIN", str(ROOT / "build" / "abx"))
if "ABX_LIBRARY" not in os.environ:
    os.environ["ABX_LIBRARY"] = str(Path(ABX).resolve().parent / "libabx.so.0")

import agent_sandbox  # noqa: E402
from agent_sandbox import (InvalidArgumentError, NotFoundError, Sandbox, SandboxError,  # noqa: E402
                           SandboxTimeoutError)

ROOT_USER = os.geteuid() == 0


def abx(*args):
    return subprocess.run([ABX, *args], capture_output=True, text=True, timeout=120, env=os.environ)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Base(unittest.TestCase):
    def setUp(self):
        self.made = []

    def tearDown(self):
        for sid in self.made:
            try:
                Sandbox.kill_by_id_sync(sid, api_key=getattr(self, "KEY", None) if sid.startswith("e2b:") else None)
            except SandboxError:
                pass

    def create(self, **kw):
        sb = Sandbox.create(**kw)
        self.made.append(sb.sandbox_id)
        return sb


class TestSandbox(Base):
    def test_round_trip(self):
        """create -> commands -> files (random bytes) -> background task -> set_timeout -> kill -> list"""
        sb = self.create(template="base", timeout=120, envs={"GREETING": "hi"}, metadata={"task": "py"})
        self.assertRegex(sb.sandbox_id, r"^local:i[a-z0-9]{20}$")
        r = sb.commands.run('echo $GREETING from $(id -un); echo oops >&2; exit 7')
        self.assertEqual((r.stdout, r.stderr, r.exit_code), ("hi from user\n", "oops\n", 7))
        self.assertEqual(sb.commands.run("id -u", user="root").stdout, "0\n")
        self.assertEqual(sb.commands.run("pwd", cwd="/tmp").stdout, "/tmp\n")
        self.assertEqual(sb.commands.run("echo $X", envs={"X": "y"}).stdout, "y\n")
        seen = []
        r = sb.commands.run("for i in 1 2 3; do echo line$i; done", on_stdout=seen.append)
        self.assertEqual("".join(seen), r.stdout)
        r = sb.commands.run("sleep 30", timeout=1)
        self.assertEqual((r.exit_code, r.error), (124, "timeout"))

        blob = os.urandom(3 << 20)
        sb.files.write("/home/user/blob.bin", blob)
        self.assertEqual(sb.files.read("/home/user/blob.bin", format="bytes"), blob)
        sb.files.write("/home/user/a.txt", "héllo")
        self.assertEqual(sb.files.read("/home/user/a.txt"), "héllo")
        self.assertTrue(sb.files.exists("/home/user/a.txt"))
        self.assertFalse(sb.files.exists("/home/user/none"))
        self.assertTrue(sb.files.make_dir("/home/user/d/e"))
        self.assertFalse(sb.files.make_dir("/home/user/d/e"))
        moved = sb.files.rename("/home/user/a.txt", "/home/user/d/b.txt")
        self.assertEqual(moved["name"], "b.txt")
        names = {e["name"]: e["type"] for e in sb.files.list("/home/user")}
        self.assertEqual(names.get("d"), "dir")
        self.assertEqual(names.get("blob.bin"), "file")
        # code written for E2B's SDK reads attributes: entry.name, .type, .path, .size
        entries = {e.name: e for e in sb.files.list("/home/user")}
        self.assertEqual((entries["d"].type, entries["d"].path), ("dir", "/home/user/d"))
        self.assertIsInstance(entries["blob.bin"].size, int)
        self.assertEqual(moved.name, "b.txt")
        self.assertEqual(sb.files.get_info("/home/user/d/b.txt").type, "file")
        written = sb.files.write("/home/user/w.txt", "w")
        self.assertEqual((written.name, written.path, written.type), ("w.txt", "/home/user/w.txt", "file"))
        with self.assertRaises(AttributeError):
            entries["d"].no_such_field
        sb.files.remove("/home/user/d")
        self.assertFalse(sb.files.exists("/home/user/d/b.txt"))

        got = []
        h = sb.commands.run("read x; echo got $x; for i in 1 2; do echo tick; sleep 0.2; done", background=True,
                            stdin=True, on_stdout=got.append)
        h.send_stdin("ping\n")
        r = h.wait(timeout=30)
        self.assertEqual(r.stdout, "got ping\ntick\ntick\n")
        self.assertEqual("".join(got), r.stdout)
        long = sb.commands.run("sleep 60", background=True)
        self.assertTrue(sb.commands.kill(long.pid))
        self.assertEqual(sb.commands.connect(long.pid).wait(timeout=10).exit_code, 137)

        before = sb.refresh_info().end_at
        sb.set_timeout(3600)
        info = sb.refresh_info()
        self.assertGreater(info.end_at, before)
        self.assertEqual((info.template_id, info.status, info.metadata, info.env_names),
                         ("base", "running", {"task": "py"}, ["GREETING"]))
        self.assertIn(sb.sandbox_id, [i.sandbox_id for i in Sandbox.list_sync()])
        sb.kill()
        self.assertNotIn(sb.sandbox_id, [i.sandbox_id for i in Sandbox.list_sync()])
        self.assertFalse(sb.is_running())
        sb.close()
        with self.assertRaises(SandboxError) as e:
            sb.commands.run("true")
        self.assertEqual(e.exception.category, "state")

    @unittest.skipUnless(os.geteuid() == 0, "volumes are root's (or the abx service's)")
    def test_volumes(self):
        """Volume.create -> mount (both forms) -> files kept across sandboxes -> destroy refused in use -> destroy"""
        from agent_sandbox import StateError, Volume
        vol = Volume.create("py-vol", size_mb=32)
        self.assertEqual((vol.name, vol.size_mb, vol.in_use), ("py-vol", 32, False))
        self.assertRegex(vol.volume_id, r"^vol-[0-9a-f]{24}$")
        sb = self.create(volume_mounts={"/data": vol})
        sb.commands.run("echo kept > /data/f")
        self.assertEqual(sb.get_info().volumes, [{"name": "py-vol", "path": "/data", "read_only": False}])
        with self.assertRaises(StateError) as caught:
            Volume.destroy(vol.volume_id)
        self.assertEqual(caught.exception.code, "E8034")
        sb.kill()
        again = self.create(volumes=["py-vol:/v:ro"])
        self.assertEqual(again.commands.run("cat /v/f; stat -c %U /v/f").stdout, "kept\nuser\n")
        self.assertNotEqual(again.commands.run("touch /v/x").exit_code, 0)
        again.kill()
        self.assertIn("py-vol", [v.name for v in Volume.list()])
        self.assertEqual(Volume.get_info("py-vol").volume_id, vol.volume_id)
        with self.assertRaises(InvalidArgumentError):
            Volume.create("Bad Name")
        with self.assertRaises(NotFoundError):
            self.create(volumes=["nosuch:/x"])
        deadline = time.time() + 10
        while Volume.get_info("py-vol").in_use and time.time() < deadline:
            time.sleep(0.1)
        self.assertTrue(Volume.destroy("py-vol"))
        self.assertFalse(Volume.destroy("py-vol"))

    @unittest.skipUnless(os.geteuid() == 0, "snapshots are root's (or the abx service's)")
    def test_snapshot_fork_durable(self):
        """create_snapshot -> create from it; fork(3) sees the parent's files; persistent survives pause"""
        sb = self.create()
        sb.commands.run("echo parent > /home/user/p")
        snap = sb.create_snapshot("py-snap")
        self.assertEqual(snap["snapshot_id"], "py-snap")
        self.assertIn("py-snap", [x["snapshot_id"] for x in Sandbox.list_snapshots()])
        child = self.create(template="py-snap")
        self.assertEqual(child.commands.run("cat /home/user/p").stdout, "parent\n")
        kids = sb.fork(3)
        self.made += [k.sandbox_id for k in kids]
        self.assertEqual(len({k.sandbox_id for k in kids}), 3)
        for k in kids:
            self.assertEqual(k.commands.run("cat /home/user/p").stdout, "parent\n")
            k.kill()
        child.kill()
        self.assertTrue(Sandbox.delete_snapshot("py-snap"))
        self.assertFalse(Sandbox.delete_snapshot("py-snap"))
        d = self.create(persistent=True)
        d.commands.run("echo kept > /home/user/k")
        d.pause()
        info = d.get_info()
        self.assertEqual((info.status, info.persistent, info.boots), ("paused", True, 1))
        d.resume()
        self.assertEqual(d.get_info().resumed_from, "memory")
        self.assertEqual(d.commands.run("cat /home/user/k").stdout, "kept\n")

    def test_context_manager_kills(self):
        with Sandbox.create() as sb:
            sid = sb.sandbox_id
            self.assertEqual(sb.commands.run("echo in").stdout, "in\n")
        with self.assertRaises(NotFoundError):
            Sandbox.get_info_by_id_sync(sid)

    @unittest.skipUnless(os.geteuid() == 0, "the local provider's port forwarding joins the sandbox's network: root")
    def test_get_host_local(self):
        """E2B's f"http://{sb.get_host(port)}" on the local provider: a forwarder, gone with the sandbox."""
        sb = self.create(timeout=120)
        sb.commands.run("mkdir -p /tmp/site && echo served-from-inside > /tmp/site/index.html")
        sb.commands.run("cd /tmp/site && exec python3 -m http.server 8123 --bind 127.0.0.1", background=True)
        host = sb.get_host(8123)
        self.assertRegex(host, r"^127\.0\.0\.1:\d+$")
        body = b""
        for _ in range(50):
            try:
                body = urllib.request.urlopen(f"http://{host}/", timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        self.assertEqual(body, b"served-from-inside\n")
        self.assertEqual(sb.get_host(8123), host)  # one forwarder a port
        self.assertEqual(sb.get_url(8123), f"http://{host}")
        with self.assertRaises(InvalidArgumentError):
            sb.get_host(70000)
        sb.kill()
        with self.assertRaises(OSError):
            urllib.request.urlopen(f"http://{host}/", timeout=5).read()

    def test_run_code(self):
        sb = self.create(template="base")
        self.assertEqual(sb.run_code("x = 6 * 7\nx").text, "42")
        ex = sb.run_code("print(x); 1/0")
        self.assertEqual(ex.logs["stdout"], ["42\n"])
        self.assertEqual(ex.logs.stdout, ["42\n"])  # E2B's Logs
        self.assertEqual(ex.logs.stderr, [])
        main = sb.run_code("x + 1").results[0]
        self.assertEqual((main.text, main.is_main_result, main["text"]), ("43", True, "43"))
        self.assertEqual(main.formats(), ["text"])
        self.assertIsNone(main.png)
        self.assertEqual(str(main), "43")
        self.assertEqual(ex.error.name, "ZeroDivisionError")
        self.assertEqual(sb.run_code("[1, 2].concat([3])", language="javascript").text, "[ 1, 2, 3 ]")


class TestErrors(Base):
    def test_categories(self):
        with self.assertRaises(NotFoundError) as e:
            Sandbox.connect("local:i00000000000000000000")
        self.assertEqual((e.exception.code, e.exception.category), ("E8002", "not_found"))
        self.assertTrue(e.exception.hint)
        self.assertIsInstance(e.exception, SandboxError)
        with self.assertRaises(InvalidArgumentError) as e:
            Sandbox.create(template="no-such-template")
        self.assertEqual(e.exception.code, "E8001")
        self.assertIn("no-such-template", e.exception.message)
        with self.assertRaises(InvalidArgumentError):
            Sandbox.create(timeout=999999)
        with self.assertRaises(InvalidArgumentError):
            Sandbox.create(memory=1)
        with self.assertRaises(InvalidArgumentError):
            Sandbox.connect("")
        sb = self.create()
        with self.assertRaises(NotFoundError) as e:
            sb.files.read("/no/such/file")
        self.assertEqual(e.exception.code, "E8023")
        with self.assertRaises(InvalidArgumentError):
            sb.commands.run("true", user="nobody")
        with self.assertRaises(SandboxError) as e:
            Sandbox.create(provider="no-such-provider")
        self.assertTrue(e.exception.code.startswith("E80"))
        self.assertFalse(Sandbox.kill_by_id_sync("local:i00000000000000000000"))
        h = sb.commands.run("sleep 30", background=True)
        with self.assertRaises(SandboxTimeoutError):
            h.wait(timeout=0.5)
        h.kill()

    def test_callback_errors_propagate(self):
        sb = self.create()

        def boom(_):
            raise RuntimeError("from the callback")
        with self.assertRaises(RuntimeError):
            sb.commands.run("echo x", on_stdout=boom)
        self.assertEqual(sb.commands.run("echo still").stdout, "still\n")


class TestIds(Base):
    def test_by_id_on_cli_ids(self):
        """ids the CLI made: used by the class methods, never adopted (nothing kills them on the way)."""
        r = abx("create", "--timeout", "120", "--metadata", "from=cli")
        self.assertEqual(r.returncode, 0, r.stderr)
        sid = r.stdout.strip()
        self.made.append(sid)
        info = Sandbox.get_info_by_id_sync(sid)
        self.assertEqual(info.metadata, {"from": "cli"})
        bare = sid.split(":", 1)[1]
        self.assertEqual(Sandbox.get_info_by_id_sync(bare).sandbox_id, sid)
        self.assertEqual(Sandbox.get_info_by_id_sync(bare, provider="local").sandbox_id, sid)
        Sandbox.set_timeout_by_id_sync(sid, 1800)
        self.assertGreater(Sandbox.get_info_by_id_sync(sid).end_at.timestamp() - Sandbox.get_info_by_id_sync(sid).started_at.timestamp(), 1700)
        # the async forms
        info = asyncio.run(Sandbox.get_info_by_id(sid))
        self.assertEqual(info.sandbox_id, sid)
        asyncio.run(Sandbox.set_timeout_by_id(sid, 900))
        listed = asyncio.run(Sandbox.list())
        self.assertIn(sid, [i.sandbox_id for i in listed])
        # a handle connected to it and closed leaves it running
        sb = Sandbox.connect(sid)
        self.assertEqual(sb.commands.run("echo used").stdout, "used\n")
        sb.close()
        self.assertEqual(abx("info", "--json", sid).returncode, 0)
        self.assertTrue(asyncio.run(Sandbox.kill_by_id(sid)))
        self.assertNotEqual(abx("info", sid).returncode, 0)
        with self.assertRaises(SandboxError):
            Sandbox.get_info_by_id_sync("nope:i00000000000000000000")


class TestE2BProvider(Base):
    """Another provider through the same calls: abx serve on loopback, reached
    with provider="e2b" and an api_key, ids qualified "e2b:..."."""

    KEY = "e2b_" + "7" * 40

    @classmethod
    def setUpClass(cls):
        env = dict(os.environ, ABX_SERVE_API_KEYS=cls.KEY)
        cls.serve = subprocess.Popen([ABX, "serve", "--listen", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True)
        line = cls.serve.stderr.readline()
        import re
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if not m:
            cls.serve.kill()
            raise RuntimeError(f"abx serve did not start: {line}")
        os.environ["ABX_SANDBOX_BASE_URL"] = f"http://127.0.0.1:{m.group(1)}"

    @classmethod
    def tearDownClass(cls):
        cls.serve.terminate()
        cls.serve.wait(timeout=30)
        os.environ.pop("ABX_SANDBOX_BASE_URL", None)

    def test_e2b_provider(self):
        sb = self.create(provider="e2b", api_key=self.KEY, template="base", metadata={"via": "serve"})
        self.assertRegex(sb.sandbox_id, r"^e2b:i[a-z0-9]{20}$")
        self.assertEqual(sb.commands.run("echo over e2b").stdout, "over e2b\n")
        data = os.urandom(50000)
        sb.files.write("/tmp/d", data)
        self.assertEqual(sb.files.read("/tmp/d", format="bytes"), data)
        info = Sandbox.get_info_by_id_sync(sb.sandbox_id, api_key=self.KEY)  # the provider from the id
        self.assertEqual(info.metadata, {"via": "serve"})
        again = Sandbox.connect(sb.sandbox_id, api_key=self.KEY)
        self.assertEqual(again.commands.run("echo again").stdout, "again\n")
        again.close()
        listed = Sandbox.list_sync(provider="e2b", api_key=self.KEY)
        self.assertIn(sb.sandbox_id, [i.sandbox_id for i in listed])
        with self.assertRaises(SandboxError) as e:  # a key the server does not know
            Sandbox.list_sync(provider="e2b", api_key="e2b_" + "0" * 40)
        self.assertEqual(e.exception.category, "auth")
        self.assertNotIn(self.KEY, str(e.exception))
        self.assertTrue(Sandbox.kill_by_id_sync(sb.sandbox_id, api_key=self.KEY))
        self.assertFalse(Sandbox.kill_by_id_sync(sb.sandbox_id, api_key=self.KEY))


class TestPluginProvider(Base):
    """An exec plugin (providers/local-process) through the same calls: the
    SDK reaches what libabx reaches, with the plugin's ids."""

    def test_local_process_plugin(self):
        r = abx("provider", "install", str(ROOT / "providers" / "local-process"), "--yes")
        self.assertEqual(r.returncode, 0, r.stderr)
        sb = self.create(provider="local-process")
        self.assertTrue(sb.sandbox_id.startswith("local-process:"), sb.sandbox_id)
        self.assertEqual(sb.commands.run("echo via plugin").stdout, "via plugin\n")
        sb.files.write("/app/p.txt", "plugin file")
        self.assertEqual(sb.files.read("/app/p.txt"), "plugin file")
        self.assertIn(sb.sandbox_id, [i.sandbox_id for i in Sandbox.list_sync(provider="local-process")])
        # the provider comes from the id
        self.assertEqual(Sandbox.get_info_by_id_sync(sb.sandbox_id).sandbox_id, sb.sandbox_id)
        self.assertTrue(Sandbox.kill_by_id_sync(sb.sandbox_id))


class TestInstall(unittest.TestCase):
    def test_pip_install(self):
        """pip install ./python (offline: Debian's setuptools and wheel), then used from where it went."""
        py = shutil.which("python3", path="/usr/bin") or sys.executable
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build"))
            r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                                "--target", str(Path(tmp) / "site"), str(src)], capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            code = ("from agent_sandbox import Sandbox\n"
                    "with Sandbox.create() as sb: print(sb.commands.run('echo installed').stdout, end='')")
            env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "site"))
            r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            self.assertEqual(r.stdout, "installed\n", r.stderr[-2000:])


class TestThreads(Base):
    def test_twenty_threads_one_client(self):
        sb = self.create(template="base", timeout=300)
        errors, outs = [], {}

        def work(i):
            try:
                r = sb.commands.run(f"sleep 0.5; echo {i}")
                outs[i] = r.stdout
                sb.files.write(f"/tmp/t{i}", str(i))
                outs[i] += sb.files.read(f"/tmp/t{i}")
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        t0 = __import__("time").monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = __import__("time").monotonic() - t0
        self.assertEqual(errors, [])
        self.assertEqual(outs, {i: f"{i}\n{i}" for i in range(20)})
        # twenty half-second commands in parallel: the GIL is released while they run
        self.assertLess(elapsed, 20 * 0.5 / 2)


class TestMemory(Base):
    @unittest.skipUnless(os.environ.get("ABX_PY_LEAK_LOOPS", "1000") != "0", "ABX_PY_LEAK_LOOPS=0")
    def test_create_kill_loop_keeps_memory_flat(self):
        loops = int(os.environ.get("ABX_PY_LEAK_LOOPS", "1000"))
        for _ in range(50):  # warm up allocator and caches
            with Sandbox.create():
                pass
        gc.collect()
        start = rss_kib()
        for i in range(loops):
            sb = Sandbox.create()
            sb.files.write("/tmp/f", "x")
            sb.kill()
            sb.close() if i % 2 else None  # the rest are freed by their finalizers
        gc.collect()
        grown = rss_kib() - start
        self.assertLess(grown, 8 * 1024, f"RSS grew {grown} KiB over {loops} create/kill")


def tearDownModule():
    shutil.rmtree(HOME, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
