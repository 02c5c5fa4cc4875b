#!/usr/bin/env python3
# provider.py: the local-process reference plugin for abx (EPP, exec kind).
#
# NO ISOLATION: a "sandbox" is a directory on the host and its commands are
# ordinary host processes of the user who runs abx. It exists to show the
# protocol end to end and to develop plugins; never run untrusted code here.
#
# Protocol: ../../../shared/epp.md (JSON-RPC 2.0, one message per line on
# stdin/stdout). State lives in $ABX_PROVIDER_DATA_DIR, because abx may
# start a new process of this plugin for every command.
import base64, datetime, json, os, secrets, shutil, stat, subprocess, sys

DATA = os.environ.get("ABX_PROVIDER_DATA_DIR") or os.path.join(os.getcwd(), ".data")
FEATURES = ["sandbox.lifecycle", "sandbox.timeout", "exec.run", "files.rw"]
config = {}


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


def exec_run(p):
    rec = load(p.get("sandbox_id"))
    home = inside(rec, "/home/user")
    cwd = inside(rec, p.get("cwd") or "/home/user")
    if not os.path.isdir(cwd):
        raise RpcError(-32602, "no such directory", "E8002")
    env = dict(os.environ, HOME=home, **rec.get("envs", {}), **(p.get("envs") or {}))
    try:
        r = subprocess.run(["/bin/bash", "-c", p["cmd"]], cwd=cwd, env=env, capture_output=True,
                           timeout=p.get("timeout") or None)
        code = r.returncode if r.returncode >= 0 else 128 - r.returncode
        return {"stdout": r.stdout.decode(errors="replace"), "stderr": r.stderr.decode(errors="replace"),
                "exit_code": code}
    except subprocess.TimeoutExpired as e:
        return {"stdout": (e.stdout or b"").decode(errors="replace"), "stderr": (e.stderr or b"").decode(errors="replace"),
                "exit_code": 124}


def entry(rec, host, path):
    st = os.lstat(host)
    kind = "symlink" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "file"
    return {"name": os.path.basename(path.rstrip("/")) or "/", "type": kind, "path": path, "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode),
            "modified_time": datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


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
    dst = inside(rec, p["destination"])
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.rename(inside(rec, p["source"]), dst)
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
    "sandbox.kill": lambda p: {"killed": remove(p.get("sandbox_id", "")) if p.get("sandbox_id") else False},
    "sandbox.set_timeout": set_timeout,
    "exec.run": exec_run,
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
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
        if method == "shutdown":
            break


if __name__ == "__main__":
    main()
