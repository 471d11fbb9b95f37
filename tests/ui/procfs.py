"""/proc, read for the real-window test and scripts/window-cost.py: a process's identity (pid and
start ticks), state, CPU ticks, resident memory, name and descendants. Read only; nothing here
signals anything."""

from pathlib import Path


def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name, or None once it is gone."""
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return s[s.rfind(")") + 2 :].split()


def start_ticks(pid):
    f = stat_fields(pid)
    return int(f[19]) if f else None


def state_of(pid):
    f = stat_fields(pid)
    return f[0] if f else None


def alive(pid):
    s = state_of(pid)
    return s is not None and s not in "ZX"


def cpu_ticks(pid):
    f = stat_fields(pid)
    return int(f[11]) + int(f[12]) if f else 0


def _kib(path, key):
    """The kB figure of the line `key` in a /proc file, or 0 once the process is gone."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid):
    return _kib(f"/proc/{pid}/status", "VmRSS:")


def pss_kib(pid):
    """Proportional set size: resident memory with each shared page divided among the processes
    that map it, so a sum over processes counts a shared library once (a sum of RSS counts
    WebKit's and GTK's libraries once per process)."""
    return _kib(f"/proc/{pid}/smaps_rollup", "Pss:")


def comm(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def children_of(pid):
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            f = stat_fields(int(d.name))
            if f and int(f[1]) == pid:
                out.append(int(d.name))
    return out


def family(root):
    """Every descendant of root."""
    out, frontier = [], [root]
    while frontier:
        p = frontier.pop()
        for c in children_of(p):
            out.append(c)
            frontier.append(c)
    return out
