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
os.environ.setdefault("PIP_BREAK_SYSTEM_PACKAGES", "1")  # a sandbox is its own system: pip may install into it
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


# ---- notebook habits ----------------------------------------------------------
# What IPython accepts beyond Python, turned into Python before the cell is
# parsed: "!cmd" (and "x = !cmd", which captures its lines), line magics
# "%pip", "%conda", "%timeit", "%time", "%cd", "%env", "%pwd", and cell
# magics "%%bash", "%%sh", "%%timeit", "%%time", "%%writefile", "%%capture".
# {name} and $name in a shell command are the cell's variables, as IPython
# expands them. Top-level await runs on one event loop kept across cells.

import re, shlex, subprocess, threading, time, timeit as timeit_module

SHELL_LINE = re.compile(r"^(\s*)(?:([A-Za-z_][\w, ]*?)\s*=\s*)?!(.*)$")
MAGIC_LINE = re.compile(r"^(\s*)(?:([A-Za-z_][\w, ]*?)\s*=\s*)?%([A-Za-z_]\w*)(.*)$")
LINE_MAGICS = ("pip", "conda", "timeit", "time", "cd", "env", "pwd", "who", "ls", "system", "sx")
CELL_MAGICS = ("bash", "sh", "timeit", "time", "writefile", "capture", "python", "python3")


class UsageError(Exception):
    """A magic abx does not run (IPython's name for it)."""


class ShellLines(list):
    """The lines of a captured "!cmd", as IPython's SList: .n joined by newlines, .s by spaces."""

    @property
    def n(self):
        return "\n".join(self)

    @property
    def s(self):
        return " ".join(self)

    nlstr = n
    spstr = s


def expand(command):
    """{name} and $name as the cell's variables (others left as written)."""
    def value(m):
        name = m.group(1) or m.group(2)
        return str(namespace[name]) if name in namespace else m.group(0)
    return re.sub(r"\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", value, command)


def abx_shell(command, capture=False):
    command = expand(command)
    sys.stdout.flush()
    sys.stderr.flush()
    if capture:
        done = subprocess.run(["/bin/bash", "-c", command], stdout=subprocess.PIPE, text=True, errors="replace")
        namespace["_exit_code"] = done.returncode
        return ShellLines(done.stdout.splitlines())
    done = subprocess.run(["/bin/bash", "-c", command])
    namespace["_exit_code"] = done.returncode
    return None


def pip_install(args):
    """%pip / %conda: pip of this kernel's interpreter (conda is not installed here)."""
    words = shlex.split(expand(args))
    return abx_shell(" ".join(shlex.quote(w) for w in [sys.executable, "-m", "pip"] + words))


def best_of(stmt, setup="pass"):
    """%timeit's figures: loops chosen so one run takes 0.2 s, seven runs."""
    timer = timeit_module.Timer(stmt, setup, globals=namespace)
    number, _ = timer.autorange()
    runs = [t / number for t in timer.repeat(repeat=7, number=number)]
    mean = sum(runs) / len(runs)
    std = (sum((r - mean) ** 2 for r in runs) / len(runs)) ** 0.5

    def unit(t):
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "\u00b5s"), (1e-9, "ns")):
            if t >= scale:
                return "%.3g %s" % (t / scale, name)
        return "%.3g ns" % (t / 1e-9)
    print("%s \u00b1 %s per loop (mean \u00b1 std. dev. of 7 runs, %d loop%s each)"
          % (unit(mean), unit(std), number, "" if number == 1 else "s"))


def time_it(code_text):
    start, cpu = time.perf_counter(), time.process_time()
    try:
        run_cell(code_text, notebook=False)
    finally:
        wall = time.perf_counter() - start
        print("CPU times: total: %.3g s\nWall time: %.3g s" % (time.process_time() - cpu, wall))


def line_magic(name, args):
    args = args.strip()
    if name in ("pip", "conda"):
        if name == "conda":
            print("conda is not installed in this sandbox: installing with pip instead")
            args = " ".join(w for w in args.split() if w not in ("-y", "--yes"))
        return pip_install(args)
    if name == "timeit":
        return best_of(args)
    if name == "time":
        return time_it(args)
    if name == "cd":
        os.chdir(os.path.expanduser(expand(args) or "~"))
        print(os.getcwd())
        return None
    if name == "pwd":
        return os.getcwd()
    if name == "env":
        if not args:
            return dict(os.environ)
        if "=" in args:
            k, v = args.split("=", 1)
            os.environ[k.strip()] = expand(v.strip())
            return None
        return os.environ.get(args)
    if name == "who":
        print("  ".join(sorted(k for k in namespace if not k.startswith("_") and k not in ("In", "Out"))))
        return None
    if name == "ls":
        return abx_shell("ls " + args)
    if name in ("system", "sx"):
        return abx_shell(args, capture=True)
    raise UsageError("line magic %%%s is not available here; abx runs %s"
                     % (name, ", ".join("%" + m for m in LINE_MAGICS)))


class Capture:
    def __init__(self, stdout, stderr):
        self.stdout, self.stderr = stdout, stderr

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)

    def __repr__(self):
        return "<captured output: %d bytes of stdout, %d of stderr>" % (len(self.stdout), len(self.stderr))


def cell_magic(name, args, body):
    """A cell that starts with %%name: the rest of the cell is the magic's."""
    if name in ("bash", "sh"):
        sys.stdout.flush()
        sys.stderr.flush()
        done = subprocess.run(["/bin/bash" if name == "bash" else "/bin/sh", "-c", body])
        if done.returncode:
            raise SystemExit(done.returncode)
        return None
    if name == "timeit":
        return best_of(body, args.strip() or "pass")
    if name == "time":
        return time_it(body)
    if name in ("python", "python3"):
        return run_cell(body)
    if name == "writefile":
        words = shlex.split(args)
        append = "-a" in words or "--append" in words
        path = [w for w in words if not w.startswith("-")]
        if not path:
            raise ValueError("%%writefile needs a file name")
        with open(path[0], "a" if append else "w") as f:
            f.write(body)
        print("%s %s" % ("Appending to" if append else "Writing", path[0]))
        return None
    if name == "capture":
        out, err = io.StringIO(), io.StringIO()
        real = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            run_cell(body)
        finally:
            sys.stdout, sys.stderr = real
        target = args.strip().split()
        if target and target[0].isidentifier():
            namespace[target[0]] = Capture(out.getvalue(), err.getvalue())
        return None
    raise UsageError("cell magic %%%%%s is not available here; abx runs %s"
                     % (name, ", ".join("%%" + m for m in CELL_MAGICS)))


def notebook_source(code):
    """The cell as Python: None when it is a cell magic (run by run_cell)."""
    lines = code.split("\n")
    out = []
    for line in lines:
        m = SHELL_LINE.match(line)
        if m and not line.lstrip().startswith("!="):
            indent, target, command = m.groups()
            call = "__abx_shell__(%r, capture=%s)" % (command, bool(target))
            out.append("%s%s%s" % (indent, target + " = " if target else "", call))
            continue
        m = MAGIC_LINE.match(line)
        if m:
            indent, target, name, args = m.groups()
            out.append("%s%s__abx_magic__(%r, %r)" % (indent, target + " = " if target else "", name, args))
            continue
        out.append(line)
    return "\n".join(out)


namespace["__abx_shell__"] = abx_shell
namespace["__abx_magic__"] = line_magic
loop = None  # the event loop top-level await runs on, made at the first await


def run_awaitable(value):
    global loop
    import asyncio
    if loop is None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    return loop.run_until_complete(value)


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


TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
CO_COROUTINE = 0x80


def run_code_object(code_obj):
    """Runs compiled cell code; code with top-level await is a coroutine."""
    value = eval(code_obj, namespace)
    if code_obj.co_flags & CO_COROUTINE:
        value = run_awaitable(value)
    return value


def run_cell(code, notebook=True):
    stripped = code.lstrip("\n")
    if notebook and stripped.startswith("%%"):
        first, _, body = stripped.partition("\n")
        name, _, args = first[2:].partition(" ")
        value = cell_magic(name.strip(), args, body)
        flush_figures()
        return value
    try:
        tree = ast.parse(code, "<cell>", "exec")  # Python as written is never rewritten
    except SyntaxError:
        if not notebook:
            raise
        tree = ast.parse(notebook_source(code), "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    run_code_object(compile(tree, "<cell>", "exec", flags=TOP_LEVEL_AWAIT))
    value = None
    if last is not None:
        value = run_code_object(compile(last, "<cell>", "eval", flags=TOP_LEVEL_AWAIT))
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
    if issubclass(etype, SyntaxError):
        frames = []  # the parser's own frames say nothing about the cell
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


GRACE_S = 0.5  # how long output of a cell's threads and tasks is still the cell's (docs/mcp-tools.md)


def grace(threads_before):
    """Waits up to GRACE_S for the threads this cell started and the tasks it
    left on the event loop, so that what they print right after the cell's
    last statement comes with this cell rather than the next."""
    deadline = time.monotonic() + GRACE_S
    try:
        if loop is not None and not loop.is_closed():
            import asyncio
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=GRACE_S))
        for t in threading.enumerate():
            if t not in threads_before and t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
    except (Exception, KeyboardInterrupt):
        pass


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
    threads_before = set(threading.enumerate())
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
    grace(threads_before)
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
