# on-a-terminal.py ABX MODE COMMAND: runs `ABX run -- sh -c COMMAND` with a
# pseudo-terminal as its controlling terminal (MODE "all": stdin, stdout and
# stderr on it; "out": stdin from /dev/null, stdout and stderr on it; "bg":
# as "all" but abx in a background process group, exit 200 if it stopped), then
# prints the output and the terminal's modes as JSON: what a user's
# terminal looks like after the sandbox is gone. Runs on the host: it only
# opens a pty and reads its settings.
import fcntl, json, os, pty, signal, sys, termios, select
abx = sys.argv[1]
mode = sys.argv[2]
cmd = sys.argv[3]
master, slave = pty.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.dup2(slave, 0); os.dup2(slave, 1); os.dup2(slave, 2)
    if mode == 'out':
        os.dup2(os.open('/dev/null', os.O_RDONLY), 0)
    fcntl.ioctl(1, termios.TIOCSCTTY, 0)
    if mode == 'bg':  # abx in a background process group of the terminal, as `abx run ... &`
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        child = os.fork()
        if child == 0:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            os.execv(abx, [abx, 'run', '--', 'sh', '-c', cmd])
        _, status = os.waitpid(child, os.WUNTRACED)
        os._exit(200 if os.WIFSTOPPED(status) else os.waitstatus_to_exitcode(status))
    os.execv(abx, [abx, 'run', '--', 'sh', '-c', cmd])
out = b''
while True:
    r, _, _ = select.select([master], [], [], 10)
    if not r: break
    try:
        d = os.read(master, 4096)
    except OSError:
        break
    if not d: break
    out += d
_, st = os.waitpid(pid, 0)
try:
    lflag = termios.tcgetattr(slave)[3]
except termios.error as e:
    print(json.dumps({"out": out.decode("utf-8", "replace"), "error": str(e)}))
    sys.exit(0)
print(json.dumps({"out": out.decode("utf-8", "replace"), "status": os.waitstatus_to_exitcode(st),
                  "echo": bool(lflag & termios.ECHO), "isig": bool(lflag & termios.ISIG),
                  "icanon": bool(lflag & termios.ICANON), "ldisc": fcntl.ioctl(slave, 0x5424, b"\0" * 4)[0]}))
