"""CPU time of the server process (all its threads: the event loop, the models, aiortc's
codec and RTP threads), read from /proc so a level's cost can be told apart."""

from __future__ import annotations


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds the process has used so far; None off Linux."""
    import os

    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: count fields after its ')'
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds and wall seconds of the process between `start` and `stop`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._cpu0: float | None = None
        self._t0 = 0.0

    def start(self) -> None:
        import time

        self._cpu0 = process_cpu_s(self.pid)
        self._t0 = time.monotonic()

    def stop(self, sessions: int) -> dict[str, float | None]:
        import time

        wall = time.monotonic() - self._t0
        cpu1 = process_cpu_s(self.pid)
        cpu = None if cpu1 is None or self._cpu0 is None else cpu1 - self._cpu0
        return {
            "cpu_s": None if cpu is None else round(cpu, 2),
            "wall_s": round(wall, 2),
            "cores": None if cpu is None or wall <= 0 else round(cpu / wall, 3),
            # the cores one session kept busy, on average over the level
            "cores_per_session": None
            if cpu is None or wall <= 0
            else round(cpu / wall / sessions, 4),
        }
