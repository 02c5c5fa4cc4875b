# python_kernel.py: abx's stateful Python kernel (runs inside a sandbox).
# Protocol: one JSON request per stdin line, {"id", "code", "cwd", "env"?,
# "save_after"?}; one reply
# per request on the original stdout, MARKER + JSON + "\n", with the cell's
# stdout and stderr (captured at the file-descriptor level, so subprocesses
# are captured too) base64-encoded and capped, its exit code, the value of a
# final expression, the files it created or changed under cwd, and where a
# stream longer than save_after bytes was saved whole (stdout_path).
# Variables live in one namespace for the kernel's life, as in a notebook.
# SIGINT (sent on timeout) interrupts the running cell; the kernel survives.
import ast, base64, json, os, sys, tempfile, traceback

MARKER = "\x1e\x1fabx-result:"
HEAD = TAIL = 128 * 1024  # bytes of each stream sent back: the first and last (lib/bounds.h)
RESULT_MAX = 1024 * 1024  # a final expression's repr is cut past this
FILES_MAX = 1000
proto = os.fdopen(os.dup(1), "w", buffering=1)
namespace = {"__name__": "__main__", "__builtins__": __builtins__}


def snapshot(root):
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
            if len(seen) >= 10000:
                return seen
    return seen


def run_cell(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), namespace)
        if value is not None:
            namespace["_"] = value
            text = repr(value)
            return text if len(text) <= RESULT_MAX else text[:RESULT_MAX] + "..."
    return None


def cell_traceback(etype, value, tb):
    while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
        tb = tb.tb_next
    traceback.print_exception(etype, value, tb)


def read_capped(f):
    """The first HEAD and last TAIL bytes of f, the total, and where the cut is."""
    f.seek(0, os.SEEK_END)
    total = f.tell()
    f.seek(0)
    data = f.read(HEAD)
    cut = len(data)
    if total > HEAD:
        f.seek(max(HEAD, total - TAIL))
        data += f.read(TAIL)
    return base64.b64encode(data).decode(), total, cut


SAVE_DIR = "/tmp/.abx-output"
SAVE_KEEP = 32  # saved outputs kept per kernel; older ones are removed
saved_files = []


def capture_file(req, stream):
    """Where the cell's stream is captured: a file in SAVE_DIR, kept when the
    stream passes the caller's save_after bytes (else removed after the
    cell), or an anonymous temporary file."""
    try:
        os.makedirs(SAVE_DIR, exist_ok=True)
        path = "%s/python-%d-%s.%s" % (SAVE_DIR, os.getpid(), req.get("id"), stream)
        return open(path, "w+b"), path
    except (OSError, TypeError):
        return tempfile.TemporaryFile(), None


def keep_or_remove(path, total, req):
    """The path when the stream is kept whole (newest SAVE_KEEP), else None."""
    limit = req.get("save_after") or 0
    if path is None:
        return None
    if not limit or total <= limit:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    saved_files.append(path)
    while len(saved_files) > SAVE_KEEP:
        try:
            os.unlink(saved_files.pop(0))
        except OSError:
            pass
    return path


def serve():
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        cwd = req.get("cwd") or os.getcwd()
        try:
            os.chdir(cwd)
        except OSError:
            pass
        env = req.get("env") or {}
        saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update({str(k): str(v) for k, v in env.items()})
        before = snapshot(cwd)
        out, out_path = capture_file(req, "stdout")
        err, err_path = capture_file(req, "stderr")
        sys.stdout.flush()
        sys.stderr.flush()
        saved_out, saved_err = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        result, code = None, 0
        try:
            result = run_cell(req.get("code", ""))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except KeyboardInterrupt:
            code = 130
            sys.stderr.write("KeyboardInterrupt: the cell was interrupted (timeout)\n")
        except BaseException:
            code = 1
            cell_traceback(*sys.exc_info())
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)
        for k, v in saved_env.items():  # per-cell variables end with the cell
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        after = snapshot(cwd)
        files = [{"name": os.path.basename(p), "path": p, "size": after[p][1]}
                 for p in sorted(after) if before.get(p) != after[p]][:FILES_MAX]
        o, o_total, o_cut = read_capped(out)
        e, e_total, e_cut = read_capped(err)
        o_path = keep_or_remove(out_path, o_total, req)
        e_path = keep_or_remove(err_path, e_total, req)
        out.close()
        err.close()
        reply = {"id": req.get("id"), "stdout": o, "stdout_bytes": o_total, "stdout_cut": o_cut,
                 "stderr": e, "stderr_bytes": e_total, "stderr_cut": e_cut, "exit_code": code, "result": result, "files": files,
                 "stdout_path": o_path, "stderr_path": e_path}
        proto.write(MARKER + json.dumps(reply) + "\n")
        proto.flush()


while True:
    try:
        serve()
        break
    except KeyboardInterrupt:
        continue  # a late SIGINT between cells: keep serving
