"""sandbox.py: Sandbox and what hangs off it (commands, files, run_code),
over libabx (_native.py).

Choices (docs/python.md): an instance's methods block (E2B's Python SDK
habits: `sb.commands.run(...)` returns the result); the spec's class methods
`list`, `get_info_by_id`, `set_timeout_by_id` and `kill_by_id` are
coroutines, with blocking `_sync` twins. Every libabx handle is freed by
close() or, failing that, by a finalizer; libabx's calls run without the
GIL, so threads share one client and run in parallel.
"""
from __future__ import annotations

import asyncio
import ctypes
import json
import os
import re
import shutil
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Union

from . import _native as n
from .errors import InvalidArgumentError, NotFoundError, SandboxError, error_from

OutputCallback = Callable[[str], None]


def _split_id(sandbox_id: str, provider: Optional[str]):
    """'provider:id' names its provider; a bare id uses the one given, else resolution."""
    if not isinstance(sandbox_id, str) or not sandbox_id:
        raise InvalidArgumentError("sandbox_id: a non-empty string is required", code="E8001", number=8001,
                                   category="validation", hint="Pass the id create() returned, e.g. local:i...")
    if ":" in sandbox_id:
        prefix = sandbox_id.split(":", 1)[0]
        return sandbox_id, provider or prefix
    return sandbox_id, provider


def _client(provider, region=None, api_key=None):
    """The shared client of a provider (and API key); region travels as a
    provider option, not here."""
    del region
    return n.client(provider, api_key)


# ---- results ----------------------------------------------------------------------


class _Record(dict):
    """A dict whose keys read as attributes too: E2B's Python SDK returns
    objects (entry.name, result.text, execution.logs.stdout) and abx's
    results stay the dicts they were (entry["name"])."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class EntryInfo(_Record):
    """A file or directory, as E2B's EntryInfo: name, type ("file", "dir"
    or "symlink"), path, size, mode, permissions, owner, group,
    modified_time (and symlink_target for a link)."""

    __slots__ = ()


class WriteInfo(_Record):
    """What files.write wrote, as E2B's WriteInfo: name, type, path (and size)."""

    __slots__ = ()


class Result(_Record):
    """One output of a cell, as E2B's Result: text, html, markdown, svg, png,
    jpeg, pdf, latex, json, javascript, data, chart, extra, is_main_result."""

    __slots__ = ()
    _FORMATS = ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript", "data",
                "chart")

    def __getattr__(self, name):
        if name in self._FORMATS or name in ("extra", "is_main_result"):
            return self.get(name, False if name == "is_main_result" else None)
        return super().__getattr__(name)

    def formats(self) -> List[str]:
        """The formats this result has (E2B's Result.formats())."""
        return [f for f in self._FORMATS if self.get(f) is not None]

    def __str__(self) -> str:
        return self.get("text") or ""


class Logs(_Record):
    """A cell's stdout and stderr as lists of strings, as E2B's Logs."""

    __slots__ = ()


@dataclass
class CommandResult:
    stdout: str
    stderr: str
    exit_code: int
    error: Optional[str] = None  # "timeout" when the timeout ended it


@dataclass
class SandboxInfo:
    sandbox_id: str
    template_id: str
    status: str
    started_at: datetime
    end_at: datetime
    cpu_count: int
    memory_mb: int
    disk_size_mb: int
    metadata: Dict[str, str] = field(default_factory=dict)
    env_names: List[str] = field(default_factory=list)
    network: Optional[Dict[str, Any]] = None
    volumes: List[Dict[str, Any]] = field(default_factory=list)  # [{name, path, read_only}]
    persistent: bool = False
    boots: int = 0
    resumed_from: str = ""  # "memory", "files" or ""


def _info_from(c: n.SandboxInfo) -> SandboxInfo:
    def js(ptr, default):
        return json.loads(n.text_of(ptr)) if ptr else default

    return SandboxInfo(
        sandbox_id=c.sandbox_id.decode(), template_id=c.template_id.decode(), status=c.status.decode(),
        started_at=datetime.fromtimestamp(c.started_at, timezone.utc),
        end_at=datetime.fromtimestamp(c.end_at, timezone.utc), cpu_count=c.cpu_count, memory_mb=c.memory_mb,
        disk_size_mb=c.disk_size_mb, metadata=js(c.metadata_json, {}), env_names=js(c.env_names_json, []),
        network=js(c.network_json, None), volumes=js(c.volumes_json, []), persistent=bool(c.persistent),
        boots=c.boots, resumed_from=c.resumed_from.decode())


class _Stream:
    """Calls a Python callback from libabx's output callback; an exception
    raised there is kept and raised again after the call."""

    def __init__(self, fn: Optional[OutputCallback]):
        self.fn = fn
        self.error: Optional[BaseException] = None
        self.c = n.OUTPUT_FN(self._on) if fn else n.OUTPUT_FN()

    def _on(self, data, length, _ud):
        if self.error is None:
            try:
                self.fn(ctypes.string_at(data, length).decode("utf-8", "replace"))
            except BaseException as e:  # noqa: BLE001 (raised again by the caller)
                self.error = e


class CommandHandle:
    """A command started with background=True."""

    def __init__(self, sandbox: "Sandbox", pid: int, on_stdout=None, on_stderr=None):
        self._sb = sandbox
        self.pid = pid
        self._on_stdout = on_stdout
        self._on_stderr = on_stderr
        self._out = self._err = 0
        self._stdout: List[str] = []
        self._stderr: List[str] = []

    def _poll(self, wait_ms: int):
        o = n.ProcessOutput()
        n.call(n.lib.abx_sandbox_read_output, self._sb._h(), self.pid, self._out, self._err, wait_ms,
               ctypes.byref(o))
        try:
            out, err = n.text_of(o.stdout_data, o.stdout_len), n.text_of(o.stderr_data, o.stderr_len)
            self._out, self._err = o.stdout_offset, o.stderr_offset
            return o.running, o.exit_code, out, err
        finally:
            n.lib.abx_process_output_clear(ctypes.byref(o))

    def wait(self, timeout: Optional[float] = None) -> CommandResult:
        """Waits for the command to end, passing its output to the callbacks."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            running, code, out, err = self._poll(1000)
            for text, sink, keep in ((out, self._on_stdout, self._stdout), (err, self._on_stderr, self._stderr)):
                if text:
                    keep.append(text)
                    if sink:
                        sink(text)
            if not running:
                return CommandResult("".join(self._stdout), "".join(self._stderr), code)
            if deadline is not None and time.monotonic() > deadline:
                raise error_from(8005, f"command {self.pid} still runs after {timeout} s", "E8005", "timeout",
                                 "Wait longer, or kill() it.")

    def kill(self) -> bool:
        try:
            n.call(n.lib.abx_sandbox_signal, self._sb._h(), self.pid, 9)
            return True
        except NotFoundError:
            return False

    def send_stdin(self, data: Union[str, bytes]) -> None:
        raw = n.b(data)
        n.call(n.lib.abx_sandbox_send_stdin, self._sb._h(), self.pid, raw, len(raw))

    def close_stdin(self) -> None:
        n.call(n.lib.abx_sandbox_close_stdin, self._sb._h(), self.pid)


class Commands:
    def __init__(self, sandbox: "Sandbox"):
        self._sb = sandbox

    def run(self, cmd: str, cwd: Optional[str] = None, envs: Optional[Dict[str, str]] = None,
            user: Optional[str] = None, timeout: Optional[float] = 60, on_stdout: Optional[OutputCallback] = None,
            on_stderr: Optional[OutputCallback] = None, background: bool = False, stdin: bool = False,
            tag: Optional[str] = None):
        """Runs cmd through `bash -l -c` (sh where there is none). Returns a
        CommandResult (any exit code), or with background=True a CommandHandle."""
        env_list = n.StrList(n.pairs(envs)) if envs else None
        if background:
            opts = n.ExecOptions(cwd=n.b(cwd), user=n.b(user), envs=env_list.array if env_list else None,
                                 tag=n.b(tag), stdin_fd=-1, pty_fd=-1, with_stdin=stdin)
            pid = ctypes.c_int()
            n.call(n.lib.abx_sandbox_start_background, self._sb._h(), n.b(cmd), ctypes.byref(opts),
                   ctypes.byref(pid))
            return CommandHandle(self._sb, pid.value, on_stdout, on_stderr)
        out, err = _Stream(on_stdout), _Stream(on_stderr)
        opts = n.ExecOptions(cwd=n.b(cwd), user=n.b(user), envs=env_list.array if env_list else None,
                             timeout_s=int(timeout) if timeout else 0, on_stdout=out.c, on_stderr=err.c,
                             keep_output=True, stdin_fd=-1, pty_fd=-1)
        r = n.ExecResult()
        n.call(n.lib.abx_sandbox_exec, self._sb._h(), n.b(cmd), ctypes.byref(opts), ctypes.byref(r))
        try:
            result = CommandResult(n.text_of(r.stdout_data, r.stdout_len), n.text_of(r.stderr_data, r.stderr_len),
                                   r.exit_code, "timeout" if r.timed_out else None)
        finally:
            n.lib.abx_exec_result_clear(ctypes.byref(r))
        for s in (out, err):
            if s.error is not None:
                raise s.error
        return result

    def connect(self, pid: int, on_stdout=None, on_stderr=None) -> CommandHandle:
        """A handle to a background command by pid (started by anyone)."""
        return CommandHandle(self._sb, int(pid), on_stdout, on_stderr)

    def kill(self, pid: int) -> bool:
        return CommandHandle(self._sb, int(pid)).kill()


class Files:
    """Paths inside the sandbox; relative ones start at the user's home."""

    MAX_READ = 1 << 30

    def __init__(self, sandbox: "Sandbox"):
        self._sb = sandbox

    def read(self, path: str, format: str = "text", user: Optional[str] = None) -> Union[str, bytes]:
        data, length = ctypes.c_void_p(), ctypes.c_size_t()
        n.call(n.lib.abx_sandbox_read_file, self._sb._h(), n.b(path), n.b(user), self.MAX_READ, ctypes.byref(data),
               ctypes.byref(length))
        try:
            raw = ctypes.string_at(data, length.value) if data.value else b""
        finally:
            n.lib.abx_free(data)
        if format == "bytes":
            return raw
        if format != "text":
            raise InvalidArgumentError("format: 'text' or 'bytes'", code="E8001", number=8001,
                                       category="validation", hint="files.read(path, format='bytes')")
        return raw.decode("utf-8", "replace")

    def write(self, path: str, data: Union[str, bytes], user: Optional[str] = None) -> Dict[str, Any]:
        raw = n.b(data) if isinstance(data, (str, bytes)) else bytes(data)
        n.call(n.lib.abx_sandbox_write_file, self._sb._h(), n.b(path), raw, len(raw), n.b(user))
        return WriteInfo(name=path.rstrip("/").rsplit("/", 1)[-1], type="file", path=path, size=len(raw))

    def _json(self, fn, *args):
        out = ctypes.c_void_p()
        n.call(fn, *args, ctypes.byref(out))
        try:
            return json.loads(n.text_of(out))
        finally:
            n.lib.abx_free(out)

    def list(self, path: str = ".", depth: int = 1, user: Optional[str] = None) -> List[EntryInfo]:
        return [EntryInfo(e) for e in self._json(n.lib.abx_sandbox_list_files, self._sb._h(), n.b(path), depth,
                                                   n.b(user))]

    def get_info(self, path: str, user: Optional[str] = None) -> EntryInfo:
        return EntryInfo(self._json(n.lib.abx_sandbox_stat, self._sb._h(), n.b(path), n.b(user)))

    def exists(self, path: str, user: Optional[str] = None) -> bool:
        try:
            self.get_info(path, user)
            return True
        except NotFoundError:
            return False

    def make_dir(self, path: str, user: Optional[str] = None) -> bool:
        created = ctypes.c_bool()
        n.call(n.lib.abx_sandbox_mkdir, self._sb._h(), n.b(path), n.b(user), ctypes.byref(created))
        return created.value

    def remove(self, path: str, user: Optional[str] = None) -> None:
        n.call(n.lib.abx_sandbox_remove, self._sb._h(), n.b(path), n.b(user))

    def rename(self, old_path: str, new_path: str, user: Optional[str] = None) -> EntryInfo:
        n.call(n.lib.abx_sandbox_move, self._sb._h(), n.b(old_path), n.b(new_path), n.b(user))
        return self.get_info(new_path, user)


@dataclass
class ExecutionError:
    name: str
    value: str
    traceback: str


@dataclass
class Execution:
    """run_code's result, as E2B's Execution: results (Result: text, html,
    png (base64), ..., is_main_result; dicts too), logs (Logs: .stdout and
    .stderr lists, or ["stdout"]), error, execution_count, text."""
    results: List[Result]
    logs: Logs
    error: Optional[ExecutionError]
    execution_count: int
    text: Optional[str]
    exit_code: int


# ---- the sandbox ---------------------------------------------------------------------------


def _abx_binary() -> str:
    """The abx CLI: ABX_BIN, else beside the loaded libabx (a checkout's build/), else on PATH."""
    env = os.environ.get("ABX_BIN")
    if env:
        return env
    beside = os.path.join(os.path.dirname(n.LIBRARY_PATH), "abx")
    if os.sep in n.LIBRARY_PATH and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("abx")
    if not found:
        raise n.error(8004, "get_host on the local provider runs `abx expose`, and no abx binary was found",
                      "Install abx (sh abx.sh install) or set ABX_BIN to its path.")
    return found


def _start_forwarder(sandbox_id: str, port: int):
    """Starts `abx expose ID PORT --json`; returns (process, "127.0.0.1:N") once it listens."""
    proc = subprocess.Popen([_abx_binary(), "expose", sandbox_id, str(port), "--json"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline()
    try:
        return proc, json.loads(line)["listen"]
    except (ValueError, KeyError, TypeError):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        text = err.decode("utf-8", "replace").strip()
        m = re.match(r"abx: (E(\d{4})): (.*?)(?: \(hint: (.*)\))?$", text.splitlines()[-1] if text else "")
        if m:
            raise n.error(int(m.group(2)), m.group(3), m.group(4)) from None
        raise n.error(8013, f"abx expose did not start: {text or 'no output'}") from None


def _stop_forwarders(forwards: Dict[int, Any]) -> None:
    for proc, _host in list(forwards.values()):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    forwards.clear()


def _release(handle, forwards) -> None:
    """What close() (or the finalizer) frees: the forwarders, then the handle."""
    _stop_forwarders(forwards)
    n.lib.abx_sandbox_free(handle)


class Sandbox:
    """A sandbox. Make one with Sandbox.create() or Sandbox.connect(id)."""

    def __init__(self, handle: ctypes.c_void_p, provider: Optional[str], created: bool):
        self._handle = handle
        self._lock = threading.Lock()
        self.provider = provider
        self.sandbox_id: str = n.lib.abx_sandbox_id(handle).decode()
        self.created = created
        self.commands = Commands(self)
        self.files = Files(self)
        self._forwards: Dict[int, Any] = {}  # port -> (the abx expose process, its host:port)
        self._finalizer = weakref.finalize(self, _release, handle, self._forwards)

    def _h(self):
        if not self._finalizer.alive:
            raise SandboxError("the sandbox handle is closed", code="E8016", number=8016, category="state",
                               hint="Connect again: Sandbox.connect(sandbox_id).")
        return self._handle

    # construction

    @classmethod
    def create(cls, template: Optional[str] = None, timeout: Optional[int] = None,
               envs: Optional[Dict[str, str]] = None, metadata: Optional[Dict[str, str]] = None,
               cpu: Optional[int] = None, memory: Optional[int] = None, provider: Optional[str] = None,
               region: Optional[str] = None, api_key: Optional[str] = None, network: Optional[str] = None,
               allow_out: Optional[List[str]] = None, deny_out: Optional[List[str]] = None,
               volumes: Optional[List[str]] = None, volume_mounts: Optional[Dict[str, Any]] = None,
               persistent: bool = False, pause_files_only: bool = False, **opts: Any) -> "Sandbox":
        """Creates a sandbox on the provider resolved as the CLI resolves it
        (argument > ABX_PROVIDER > .env > ~/.abx/config.toml > local).
        Extra keyword arguments (and region) are provider options."""
        c = _client(provider, region, api_key)
        options = dict(opts)
        if region is not None:
            options["region"] = region
        # volumes: "NAME:/path[:ro]"; volume_mounts: E2B's {path: Volume or name}
        mounts = list(volumes or []) + [f"{getattr(v, 'name', v)}:{p}" for p, v in (volume_mounts or {}).items()]
        keep = [n.StrList(n.pairs(envs)), n.StrList(n.pairs(metadata)), n.StrList(n.pairs(options)),
                n.StrList(allow_out or []), n.StrList(deny_out or []), n.StrList(mounts)]
        o = n.CreateOptions(template_id=n.b(template), timeout_s=int(timeout or 0),
                            envs=keep[0].array if envs else None, metadata=keep[1].array if metadata else None,
                            cpu_count=int(cpu or 0), memory_mb=int(memory or 0),
                            options=keep[2].array if options else None, network=n.b(network),
                            allow_out=keep[3].array if allow_out else None,
                            deny_out=keep[4].array if deny_out else None,
                            volumes=keep[5].array if mounts else None, persistent=bool(persistent),
                            pause_drops_memory=bool(pause_files_only))
        out = ctypes.c_void_p()
        n.call(n.lib.abx_sandbox_create, c, ctypes.byref(o), ctypes.byref(out))
        return cls(out, provider or n.lib.abx_client_provider(c).decode(), True)

    @classmethod
    def connect(cls, sandbox_id: str, provider: Optional[str] = None, region: Optional[str] = None,
                api_key: Optional[str] = None) -> "Sandbox":
        sid, prov = _split_id(sandbox_id, provider)
        c = _client(prov, region, api_key)
        out = ctypes.c_void_p()
        n.call(n.lib.abx_sandbox_connect, c, n.b(sid), ctypes.byref(out))
        sb = cls(out, prov or n.lib.abx_client_provider(c).decode(), False)
        if sb.refresh_info().status == "paused":  # as E2B's connect: a paused sandbox goes on
            sb.resume()
        return sb

    # the instance

    def refresh_info(self) -> SandboxInfo:
        info = n.SandboxInfo()
        n.call(n.lib.abx_sandbox_get_info, self._h(), ctypes.byref(info))
        try:
            return _info_from(info)
        finally:
            n.lib.abx_sandbox_info_clear(ctypes.byref(info))

    get_info = refresh_info

    def is_running(self) -> bool:
        try:
            return self.refresh_info().status == "running"
        except NotFoundError:
            return False

    def set_timeout(self, timeout: int) -> None:
        n.call(n.lib.abx_sandbox_set_timeout, self._h(), int(timeout))

    def create_snapshot(self, name: Optional[str] = None) -> Dict[str, Any]:
        """Records its filesystem as a template (docs/snapshots.md); the
        sandbox goes on. Returns the info: snapshot_id, name, snapshot."""
        out = ctypes.c_void_p()
        n.call(n.lib.abx_sandbox_snapshot, self._h(), n.b(name), ctypes.byref(out))
        try:
            return json.loads(n.text_of(out))
        finally:
            n.lib.abx_free(out)

    @staticmethod
    def list_snapshots(sandbox_id: Optional[str] = None, provider: Optional[str] = None,
                       api_key: Optional[str] = None) -> List[Dict[str, Any]]:
        out = ctypes.c_void_p()
        n.call(n.lib.abx_snapshot_list, _client(provider, None, api_key), n.b(sandbox_id), ctypes.byref(out))
        try:
            return json.loads(n.text_of(out))
        finally:
            n.lib.abx_free(out)

    @staticmethod
    def delete_snapshot(snapshot_id: str, provider: Optional[str] = None, api_key: Optional[str] = None) -> bool:
        """False when there is no such snapshot."""
        try:
            n.call(n.lib.abx_snapshot_remove, _client(provider, None, api_key), n.b(snapshot_id))
        except NotFoundError:
            return False
        return True

    def fork(self, count: int = 1, timeout: Optional[int] = None) -> List["Sandbox"]:
        """count sandboxes from its filesystem now (docs/snapshots.md)."""
        c = _client(self.provider)
        o = n.CreateOptions(timeout_s=int(timeout or 0))
        info = self.get_info()
        o.cpu_count, o.memory_mb = info.cpu_count, info.memory_mb
        kids = ctypes.POINTER(ctypes.c_void_p)()
        n.call(n.lib.abx_sandbox_fork, c, self._h(), int(count), ctypes.byref(o), ctypes.byref(kids))
        try:
            return [Sandbox(ctypes.c_void_p(kids[i]), self.provider, True) for i in range(count)]
        finally:
            n.lib.abx_free(kids)

    def pause(self) -> None:
        """Freezes its processes (a durable one: its files synced first); E2B's pause."""
        n.call(n.lib.abx_sandbox_pause, self._h())

    def resume(self, timeout: Optional[int] = None) -> None:
        """Starts a paused sandbox again (a durable one at rest: from its files)."""
        n.call(n.lib.abx_sandbox_resume, self._h(), int(timeout or 0))

    def kill(self) -> None:
        n.call(n.lib.abx_sandbox_kill, self._h())
        _stop_forwarders(self._forwards)

    def get_host(self, port: int) -> str:
        """E2B's get_host: the host (and port) at which a service listening on
        port inside the sandbox is reached, without a scheme, so that
        f"http://{sb.get_host(3000)}" is its URL. On the local provider it is
        a forwarder on this machine's loopback (`abx expose`, started on the
        first call for that port and stopped by kill() or close())."""
        if not 1 <= int(port) <= 65535:
            raise n.error(8001, "port: expected 1-65535", "Give the port the service listens on inside the sandbox.")
        if self.provider == "local":
            return self._forward(int(port))
        return self.get_url(port).split("://", 1)[1].rstrip("/")

    def get_url(self, port: int) -> str:
        """The URL of a service listening on port inside the sandbox (the
        provider's own; on the local provider, http:// and get_host's)."""
        if self.provider == "local":
            return f"http://{self.get_host(port)}"
        url = ctypes.c_char_p()
        n.call(n.lib.abx_sandbox_port_url, self._h(), int(port), ctypes.byref(url))
        try:
            return url.value.decode()
        finally:
            n.lib.abx_free(ctypes.cast(url, ctypes.c_void_p))

    def _forward(self, port: int) -> str:
        """A running `abx expose ID PORT` for port (started once); its host:port."""
        self._h()
        with self._lock:
            running = self._forwards.get(port)
            if running and running[0].poll() is None:
                return running[1]
            proc, host = _start_forwarder(self.sandbox_id, port)
            self._forwards[port] = (proc, host)
            return host

    def run_code(self, code: str, language: Optional[str] = None, context_id: Optional[str] = None,
                 timeout: Optional[int] = None, envs: Optional[Dict[str, str]] = None) -> Execution:
        """A cell in the sandbox's kernel (state kept between calls)."""
        env_list = n.StrList(n.pairs(envs)) if envs else None
        o = n.CodeOptions(language=n.b(language), context_id=n.b(context_id), timeout_s=int(timeout or 0),
                          envs=env_list.array if env_list else None)
        r = n.CodeResult()
        n.call(n.lib.abx_sandbox_run_code, self._h(), n.b(code), ctypes.byref(o), ctypes.byref(r))
        try:
            error = None
            if r.error_name:
                error = ExecutionError(n.text_of(r.error_name), n.text_of(r.error_value), n.text_of(r.traceback))
            stdout, stderr = n.text_of(r.stdout_data, r.stdout_len), n.text_of(r.stderr_data, r.stderr_len)
            results = json.loads(n.text_of(r.results_json)) if r.results_json else []
            return Execution(results=[Result(x) for x in results],
                             logs=Logs(stdout=[stdout] if stdout else [], stderr=[stderr] if stderr else []),
                             error=error, execution_count=r.execution_count,
                             text=n.text_of(r.text) if r.text else None, exit_code=r.exit_code)
        finally:
            n.lib.abx_code_result_clear(ctypes.byref(r))

    def close(self) -> None:
        """Frees the handle; the sandbox lives on (kill() ends it)."""
        self._finalizer()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.kill()
        except NotFoundError:
            pass
        finally:
            self.close()

    def __repr__(self):
        return f"Sandbox({self.sandbox_id!r})"

    # class methods on ids: the provider's calls, no handle, nothing adopted

    @staticmethod
    def list_sync(provider: Optional[str] = None, region: Optional[str] = None, api_key: Optional[str] = None,
                  status: Optional[str] = None, limit: int = 100, offset: int = 0) -> List[SandboxInfo]:
        c = _client(provider, region, api_key)
        items, count = ctypes.POINTER(n.SandboxInfo)(), ctypes.c_size_t()
        n.call(n.lib.abx_list, c, n.b(status), int(limit), int(offset), ctypes.byref(items), ctypes.byref(count))
        try:
            return [_info_from(items[i]) for i in range(count.value)]
        finally:
            n.lib.abx_sandbox_info_list_free(items, count)

    @staticmethod
    def get_info_by_id_sync(sandbox_id: str, provider: Optional[str] = None, region: Optional[str] = None,
                            api_key: Optional[str] = None, sandbox_domain: Optional[str] = None) -> SandboxInfo:
        """sandbox_domain is accepted and not used (the control plane only)."""
        sid, prov = _split_id(sandbox_id, provider)
        info = n.SandboxInfo()
        n.call(n.lib.abx_get_info_by_id, _client(prov, region, api_key), n.b(sid), ctypes.byref(info))
        try:
            return _info_from(info)
        finally:
            n.lib.abx_sandbox_info_clear(ctypes.byref(info))

    @staticmethod
    def set_timeout_by_id_sync(sandbox_id: str, timeout: int, provider: Optional[str] = None,
                               region: Optional[str] = None, api_key: Optional[str] = None,
                               sandbox_domain: Optional[str] = None) -> None:
        sid, prov = _split_id(sandbox_id, provider)
        n.call(n.lib.abx_set_timeout_by_id, _client(prov, region, api_key), n.b(sid), int(timeout))

    @staticmethod
    def kill_by_id_sync(sandbox_id: str, provider: Optional[str] = None, region: Optional[str] = None,
                        api_key: Optional[str] = None, sandbox_domain: Optional[str] = None) -> bool:
        """True when it was killed, False when there is no such sandbox."""
        sid, prov = _split_id(sandbox_id, provider)
        try:
            n.call(n.lib.abx_kill_by_id, _client(prov, region, api_key), n.b(sid))
            return True
        except NotFoundError:
            return False

    @staticmethod
    async def list(**kw) -> List[SandboxInfo]:
        return await asyncio.to_thread(Sandbox.list_sync, **kw)

    @staticmethod
    async def get_info_by_id(sandbox_id: str, **kw) -> SandboxInfo:
        return await asyncio.to_thread(Sandbox.get_info_by_id_sync, sandbox_id, **kw)

    @staticmethod
    async def set_timeout_by_id(sandbox_id: str, timeout: int, **kw) -> None:
        return await asyncio.to_thread(Sandbox.set_timeout_by_id_sync, sandbox_id, timeout, **kw)

    @staticmethod
    async def kill_by_id(sandbox_id: str, **kw) -> bool:
        return await asyncio.to_thread(Sandbox.kill_by_id_sync, sandbox_id, **kw)
