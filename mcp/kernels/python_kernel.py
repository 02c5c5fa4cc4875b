# python_kernel.py: abx's stateful Python kernel (runs inside a sandbox,
# started by the shim: runtime/shim_code.c).
#
# Protocol: one JSON request per line on the protocol channel (the stdin it
# was started with), {"id", "code", "cwd", "env"?, "timeout"?,
# "save_after"?}; one reply per request on the original stdout, MARKER +
# JSON + "\n", with:
#   stdout, stderr: base64 of the first HEAD and last TAIL bytes, with
#     *_bytes (the total) and *_cut (where the head ends); captured at the
#     file-descriptor level, so subprocesses are captured too; output that
#     threads or timers wrote between cells comes first in the next reply;
#   results: display() outputs, matplotlib figures and the final
#     expression's value, in order, as E2B's formats (text, html, png, ...),
#     the last one with is_main_result; result: the main text, or null;
#   error: {name, value, traceback} when the cell raised, else null;
#   exit_code, files (created or changed under cwd), stdout_path and
#   stderr_path (a stream longer than save_after, kept whole).
# Variables live in one namespace for the kernel's life, as in a notebook.
# SIGINT (sent on timeout) interrupts the running cell; the kernel survives.
# The cell's stdin is empty: input() fails at once instead of blocking.
import ast, base64, builtins, importlib.abc, importlib.machinery, io, json, os, sys, tempfile, traceback

MARKER = "\x1e\x1fabx-result:"
HEAD = TAIL = 128 * 1024  # bytes of each stream sent back: the first and last (base/bounds.h)
RESULT_MAX = 1024 * 1024  # a text format is cut past this
RESULTS_MAX = 3 * 1024 * 1024  # all results of a cell together (the reply line is bounded)
FILES_MAX = 1000
SAVE_DIR = "/tmp/.abx-output"
SAVE_KEEP = 32  # saved outputs kept per kernel; older ones are removed

# The protocol keeps its own descriptors; the cell's stdin is /dev/null
# (subprocesses inherit it too), and matplotlib draws without a display.
proto = os.fdopen(os.dup(1), "w", buffering=1)  # fd 3: the reply channel
proto_in = os.fdopen(os.dup(0), "r")
null_fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(null_fd, 0)
os.close(null_fd)
sys.stdin = open(os.devnull, "r")
os.environ.setdefault("MPLBACKEND", "Agg")
namespace = {"__name__": "__main__", "__builtins__": builtins}
saved_files = []
cell_results = []  # this cell's results, in order
results_size = [0]


def no_input(prompt=""):
    raise EOFError("input() is not available: a sandbox cell has no interactive stdin; "
                   "pass data in the code, a file or an environment variable instead")


builtins.input = no_input


# ---- rich results ------------------------------------------------------------

def cut_text(text):
    return text if len(text) <= RESULT_MAX else text[:RESULT_MAX] + "..."


def figure_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def bundle(value):
    """E2B's formats of value: text always, and whatever rich forms it has."""
    out = {"text": cut_text(repr(value))}
    kind = type(value)
    if kind.__module__.startswith("matplotlib.figure") and kind.__name__ == "Figure":
        out["png"] = figure_png(value)
        return out
    for method, key in (("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
                        ("_repr_latex_", "latex"), ("_repr_json_", "json"), ("_repr_png_", "png"),
                        ("_repr_jpeg_", "jpeg")):
        fn = getattr(kind, method, None)
        if not callable(fn):
            continue
        try:
            data = fn(value)
        except Exception:
            continue
        if data is None:
            continue
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        if key in ("png", "jpeg") and isinstance(data, bytes):
            data = base64.b64encode(data).decode()
        out[key] = cut_text(data) if isinstance(data, str) else data
    return out


def add_result(result):
    size = sum(len(v) for v in result.values() if isinstance(v, str))
    if results_size[0] + size > RESULTS_MAX:
        sys.stderr.write("[abx: a result was left out: a cell's results are limited to %d bytes]\n" % RESULTS_MAX)
        return
    results_size[0] += size
    cell_results.append(result)


def display(*objs, **kwargs):
    for obj in objs:
        result = bundle(obj)
        result["is_main_result"] = False
        add_result(result)


def flush_figures():
    """Open matplotlib figures become PNG results (as a notebook shows them)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for num in pyplot.get_fignums():
        try:
            fig = pyplot.figure(num)
            add_result({"text": str(fig), "png": figure_png(fig), "is_main_result": False})
        except Exception as e:
            sys.stderr.write("[abx: a figure could not be drawn: %s]\n" % e)
    pyplot.close("all")


class PyplotHook(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """When a cell imports matplotlib.pyplot, its show() shows the figures."""

    def find_spec(self, name, path, target=None):
        if name != "matplotlib.pyplot":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        self.real = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        self.real.exec_module(module)
        module.show = lambda *args, **kwargs: flush_figures()


sys.meta_path.insert(0, PyplotHook())
builtins.display = display


# ---- a cell --------------------------------------------------------------------

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
    value = None
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), namespace)
    flush_figures()
    if value is not None:
        namespace["_"] = value
        result = bundle(value)
        result["is_main_result"] = True
        add_result(result)
        return result["text"]
    return None


KERNEL_FILE = os.path.abspath(__file__)


def error_of(etype, value, tb):
    """E2B's error: name, value, and the traceback without the kernel's frames."""
    frames = [f for f in traceback.extract_tb(tb) if f.filename != KERNEL_FILE]
    text = "".join(traceback.format_exception_only(etype, value))
    if frames:
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) + text
    return {"name": etype.__name__, "value": str(value), "traceback": text}


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


def capture_file(req, stream):
    """Where the cell's stream is captured: a file in SAVE_DIR, kept when the
    stream passes the caller's save_after bytes (else removed after the
    cell), or an anonymous temporary file."""
    try:
        os.makedirs(SAVE_DIR, exist_ok=True)
        path = "%s/python-%d-%s.%s" % (SAVE_DIR, os.getpid(), req.get("id"), stream)
        # a new file only: never through a link another user planted at the name
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        return os.fdopen(fd, "w+b"), path
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


# Between cells, fds 1 and 2 point at these files: what threads and timers
# print then is delivered with the next cell (bounded by the sandbox's disk).
late_out = tempfile.TemporaryFile()
late_err = tempfile.TemporaryFile()


def take_late(late, dest):
    late.seek(0)
    while True:
        block = late.read(1 << 20)
        if not block:
            break
        dest.write(block)
    dest.flush()
    late.seek(0)
    late.truncate()


def between_cells():
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(late_out.fileno(), 1)
    os.dup2(late_err.fileno(), 2)


def serve_one(req):
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
    take_late(late_out, out)
    take_late(late_err, err)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    del cell_results[:]
    results_size[0] = 0
    result, code, error = None, 0, None
    try:
        result = run_cell(req.get("code", ""))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:
        code = 130
        error = {"name": "KeyboardInterrupt", "value": "the cell was interrupted (timeout or cancel)", "traceback": ""}
    except BaseException:
        code = 1
        error = error_of(*sys.exc_info())
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    between_cells()
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
    return {"id": req.get("id"), "stdout": o, "stdout_bytes": o_total, "stdout_cut": o_cut,
            "stderr": e, "stderr_bytes": e_total, "stderr_cut": e_cut, "exit_code": code,
            "result": result, "results": list(cell_results), "error": error, "files": files,
            "stdout_path": o_path, "stderr_path": e_path}


def serve():
    for line in proto_in:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        reply = serve_one(req)
        proto.write(MARKER + json.dumps(reply) + "\n")
        proto.flush()


between_cells()
while True:
    try:
        serve()
        break
    except KeyboardInterrupt:
        continue  # a late SIGINT between cells: keep serving
