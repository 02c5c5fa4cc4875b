#!/usr/bin/env python3
# provider.py: the local-process reference plugin for abx (EPP, exec kind).
#
# NO ISOLATION: a "sandbox" is a directory on the host and its commands are
# ordinary host processes of the user who runs abx. It exists to show the
# protocol end to end and to develop plugins; never run untrusted code here.
#
# Protocol: ../../../shared/epp.md (JSON-RPC 2.0, one message per line on
# stdin/stdout). Sandboxes live in $ABX_PROVIDER_DATA_DIR, because abx may
# start a new process of this plugin for every command; commands started
# with exec.start (streams, background tasks) are children of this process
# and end with it.
import base64, datetime, json, os, secrets, shutil, signal, stat, subprocess, sys, threading

DATA = os.environ.get("ABX_PROVIDER_DATA_DIR") or os.path.join(os.getcwd(), ".data")
FEATURES = ["sandbox.lifecycle", "sandbox.timeout", "exec.run", "exec.stream", "process.manage", "files.rw"]
config = {}
out_lock = threading.Lock()  # answers (main thread) and exec events (pump threads) share stdout
execs = {}  # pid -> {"proc", "exec_id", "sandbox_id", "cmd"}


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


class RpcError(Exception):
    def __init__(self, code, message, abx_code=None):
        super().__init__(message)
        self.code, self.abx_code = code, abx_code


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def root():
    return config.get("workdir_root") or os.path.join(DATA, "sandboxes")


def meta_path(sid):
    if not sid or not all(c.isalnum() or c == "-" for c in sid):
        raise RpcError(-32602, "bad sandbox_id", "E8002")
    return os.path.join(root(), sid + ".json")


def load(sid):
    try:
        with open(meta_path(sid)) as f:
            rec = json.load(f)
    except FileNotFoundError:
        raise RpcError(-32000, "no such sandbox", "E8002")
    if datetime.datetime.fromisoformat(rec["expires_at"].replace("Z", "+00:00")) < now():
        remove(sid)
        raise RpcError(-32000, "no such sandbox (expired)", "E8002")
    return rec


def save(rec):
    os.makedirs(root(), exist_ok=True)
    tmp = meta_path(rec["sandbox_id"]) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.replace(tmp, meta_path(rec["sandbox_id"]))


def remove(sid):
    shutil.rmtree(os.path.join(root(), sid), ignore_errors=True)
    try:
        os.unlink(meta_path(sid))
        return True
    except FileNotFoundError:
        return False


def create(p):
    sid = "lp" + secrets.token_hex(8)
    timeout = p.get("timeout") or 300
    for d in ("app", "home/user", "tmp"):  # a sandbox's paths map under its directory
        os.makedirs(os.path.join(root(), sid, d), exist_ok=True)
    rec = {"sandbox_id": sid, "template": p.get("template") or "base", "status": "running",
           "metadata": p.get("metadata") or {}, "envs": p.get("envs") or {},
           "created_at": stamp(now()), "expires_at": stamp(now() + datetime.timedelta(seconds=timeout))}
    save(rec)
    return public(rec)


def public(rec):
    return {k: rec[k] for k in ("sandbox_id", "template", "status", "metadata", "created_at", "expires_at")}


def listing(p):
    out = []
    if os.path.isdir(root()):
        for name in sorted(os.listdir(root())):
            if name.endswith(".json"):
                try:
                    out.append(public(load(name[:-5])))
                except RpcError:
                    pass
    return {"sandboxes": out}


def set_timeout(p):
    rec = load(p.get("sandbox_id"))
    rec["expires_at"] = stamp(now() + datetime.timedelta(seconds=int(p["timeout"])))
    save(rec)
    return {"expires_at": rec["expires_at"]}


def inside(rec, path):
    """A sandbox path ("/app/x", or "x" relative to /home/user) as a host path
    under the sandbox's directory; ".." may not leave it. This is bookkeeping,
    not isolation: commands run on the host and can go anywhere."""
    top = os.path.realpath(os.path.join(root(), rec["sandbox_id"]))
    rel = path if path.startswith("/") else "/home/user/" + path
    host = os.path.normpath(top + "/" + rel.lstrip("/"))
    if host != top and not host.startswith(top + os.sep):
        raise RpcError(-32602, "path leaves the sandbox", "E8017")
    return host


def command_env(p):
    rec = load(p.get("sandbox_id"))
    cwd = inside(rec, p.get("cwd") or "/home/user")
    if not os.path.isdir(cwd):
        raise RpcError(-32602, "no such directory", "E8023")
    env = dict(os.environ, HOME=inside(rec, "/home/user"), **rec.get("envs", {}), **(p.get("envs") or {}))
    return rec, cwd, env


def exit_status(code):
    """(exit_code, signal name or None) of a subprocess return code."""
    if code < 0:
        return 128 - code, signal.Signals(-code).name
    return code, None


def exec_run(p):
    rec, cwd, env = command_env(p)
    try:
        r = subprocess.run(["/bin/bash", "-c", p["cmd"]], cwd=cwd, env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=p.get("timeout") or None)
        return {"stdout": r.stdout.decode(errors="replace"), "stderr": r.stderr.decode(errors="replace"),
                "exit_code": exit_status(r.returncode)[0]}
    except subprocess.TimeoutExpired as e:
        return {"stdout": (e.stdout or b"").decode(errors="replace"), "stderr": (e.stderr or b"").decode(errors="replace"),
                "exit_code": 124}


def exec_start(p):
    """A command whose output comes as exec.output notifications, then one
    exec.exit; it runs in its own process group so process.* reach it all."""
    rec, cwd, env = command_env(p)
    proc = subprocess.Popen(["/bin/bash", "-c", p["cmd"]], cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.PIPE if p.get("stdin") else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    exec_id = "e" + secrets.token_hex(6)
    execs[proc.pid] = {"proc": proc, "exec_id": exec_id, "sandbox_id": rec["sandbox_id"], "cmd": p["cmd"]}

    def pump(stream, name):
        for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
            send({"jsonrpc": "2.0", "method": "exec.output",
                  "params": {"exec_id": exec_id, "stream": name, "data_b64": base64.b64encode(chunk).decode()}})

    def wait():
        pumps = [threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
                 threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True)]
        for t in pumps:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=p.get("timeout") or None)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for t in pumps:
            t.join()
        code, sig = exit_status(proc.returncode)
        params = {"exec_id": exec_id, "exit_code": 124 if timed_out else code}
        if sig and not timed_out:
            params["signal"] = sig
        send({"jsonrpc": "2.0", "method": "exec.exit", "params": params})

    threading.Thread(target=wait, daemon=True).start()
    return {"exec_id": exec_id, "pid": proc.pid}


def task(p):
    t = execs.get(p.get("pid"))
    if not t or t["sandbox_id"] != p.get("sandbox_id") or t["proc"].poll() is not None:
        raise RpcError(-32000, "no such process", "E8026")
    return t


def process_signal(p, name):
    t = task(p)
    try:
        os.killpg(t["proc"].pid, signal.Signals[name])
    except KeyError:
        raise RpcError(-32602, "unknown signal", "E8001")
    except ProcessLookupError:
        raise RpcError(-32000, "no such process", "E8026")
    return {}


def process_stdin(p):
    proc = task(p)["proc"]
    if proc.stdin is None:
        raise RpcError(-32000, "stdin was not kept open", "E8001")
    try:
        proc.stdin.write(base64.b64decode(p.get("data_b64") or ""))
        proc.stdin.flush()
        if p.get("eof"):
            proc.stdin.close()
    except (BrokenPipeError, ValueError):
        pass  # it stopped reading: its exit says the rest
    return {}


def process_list(p):
    load(p.get("sandbox_id"))
    return {"processes": [{"pid": pid, "cmd": t["cmd"], "exec_id": t["exec_id"]} for pid, t in execs.items()
                          if t["sandbox_id"] == p.get("sandbox_id") and t["proc"].poll() is None]}


def kill_sandbox(p):
    sid = p.get("sandbox_id") or ""
    for t in list(execs.values()):
        if t["sandbox_id"] == sid and t["proc"].poll() is None:
            os.killpg(t["proc"].pid, signal.SIGKILL)
    return {"killed": remove(sid) if sid else False}


def entry(rec, host, path):
    st = os.lstat(host)
    kind = "symlink" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "file"
    return {"name": os.path.basename(path.rstrip("/")) or "/", "type": kind, "path": path, "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode),
            "mtime": datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def not_found(e):
    return RpcError(-32000, str(e), "E8019" if isinstance(e, IsADirectoryError) else "E8023")


def files_read(p):
    rec = load(p.get("sandbox_id"))
    host = inside(rec, p["path"])
    try:
        with open(host, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(p.get("offset") or 0)
            data = f.read(p.get("length") if p.get("length") is not None else -1)
    except OSError as e:
        raise not_found(e)
    end = (p.get("offset") or 0) + len(data)
    return {"content_b64": base64.b64encode(data).decode(), "size": size, "eof": end >= size}


def files_write(p):
    rec = load(p.get("sandbox_id"))
    host = inside(rec, p["path"])
    os.makedirs(os.path.dirname(host), exist_ok=True)
    data = base64.b64decode(p.get("content_b64") or "")
    mode = "wb" if p.get("truncate") or not os.path.exists(host) else "r+b"
    with open(host, mode) as f:
        f.seek(p.get("offset") or 0)
        f.write(data)
    if p.get("mode") is not None:
        os.chmod(host, p["mode"])
    return {"bytes_written": len(data)}


def files_list(p):
    rec = load(p.get("sandbox_id"))
    base = p["path"].rstrip("/") or "/"
    host = inside(rec, base)
    depth = p.get("depth") or 1
    out = []

    def walk(h, path, level):
        try:
            names = sorted(os.listdir(h))
        except OSError as e:
            raise not_found(e)
        for name in names:
            child = (path if path != "/" else "") + "/" + name
            out.append(entry(rec, os.path.join(h, name), child))
            if level < depth and os.path.isdir(os.path.join(h, name)) and not os.path.islink(os.path.join(h, name)):
                walk(os.path.join(h, name), child, level + 1)

    walk(host, base, 1)
    return {"entries": out}


def files_stat(p):
    rec = load(p.get("sandbox_id"))
    try:
        return entry(rec, inside(rec, p["path"]), p["path"])
    except OSError as e:
        raise not_found(e)


def files_mkdir(p):
    rec = load(p.get("sandbox_id"))
    os.makedirs(inside(rec, p["path"]), exist_ok=bool(p.get("parents")))
    return {}


def files_remove(p):
    rec = load(p.get("sandbox_id"))
    host = inside(rec, p["path"])
    if os.path.isdir(host) and not os.path.islink(host):
        shutil.rmtree(host)
    elif os.path.lexists(host):
        os.unlink(host)
    else:
        raise RpcError(-32000, "no such file", "E8023")
    return {}


def files_move(p):
    rec = load(p.get("sandbox_id"))
    dst = inside(rec, p["to"])
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.rename(inside(rec, p["from"]), dst)
    except OSError as e:
        raise not_found(e)
    return {}


def initialize(p):
    config.update(p.get("config") or {})
    return {"protocol_version": "1", "name": "local-process", "version": "0.1.0", "features": FEATURES}


METHODS = {
    "initialize": initialize,
    "shutdown": lambda p: {},
    "sandbox.create": create,
    "sandbox.get": lambda p: public(load(p.get("sandbox_id"))),
    "sandbox.list": listing,
    "sandbox.kill": kill_sandbox,
    "sandbox.set_timeout": set_timeout,
    "exec.run": exec_run,
    "exec.start": exec_start,
    "process.list": process_list,
    "process.kill": lambda p: process_signal(p, "SIGKILL"),
    "process.signal": lambda p: process_signal(p, p.get("signal") or "SIGTERM"),
    "process.stdin": process_stdin,
    "files.read": files_read,
    "files.write": files_write,
    "files.list": files_list,
    "files.stat": files_stat,
    "files.mkdir": files_mkdir,
    "files.remove": files_remove,
    "files.move": files_move,
}


def main():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        mid, method = msg.get("id"), msg.get("method")
        fn = METHODS.get(method)
        try:
            if fn is None:
                raise RpcError(-32601, "method not found")
            reply = {"jsonrpc": "2.0", "id": mid, "result": fn(msg.get("params") or {})}
        except RpcError as e:
            error = {"code": e.code, "message": str(e)}
            if e.abx_code:
                error["data"] = {"abx_code": e.abx_code}
            reply = {"jsonrpc": "2.0", "id": mid, "error": error}
        except Exception as e:  # a bug here is an error answer, not a dead plugin
            print("local-process: %r" % e, file=sys.stderr)
            reply = {"jsonrpc": "2.0", "id": mid, "error": {"code": -32603, "message": "internal error"}}
        if mid is not None:
            send(reply)
        if method == "shutdown":
            break
    for t in execs.values():  # its commands end with it
        if t["proc"].poll() is None:
            os.killpg(t["proc"].pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
