"""Run workload.py for SECONDS while sampling /sys/block/vda/stat every 5 ms into OUT.

Usage: sample_diskstat.py SECONDS OUT WORKDIR. Each line: mono_ns, writes completed, write
ticks (ms), flushes completed; the kernel's own await totals, to within 1 ms.
"""

import subprocess
import sys
import threading
import time
from pathlib import Path

WORKLOAD = Path(__file__).resolve().parents[4] / "shared" / "capture-tools" / "workload.py"


def main() -> None:
    seconds, out_path, workdir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    workdir.mkdir(parents=True, exist_ok=True)
    done = threading.Event()

    def sample() -> None:
        with open("/sys/block/vda/stat") as stat, out_path.open("w") as out:
            while not done.is_set():
                stat.seek(0)
                fields = stat.read().split()
                now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                out.write(f"{now} {fields[4]} {fields[7]} {fields[14]}\n")
                time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    time.sleep(0.5)
    subprocess.run([sys.executable, str(WORKLOAD), str(workdir), seconds], check=True)
    time.sleep(0.3)
    done.set()
    sampler.join()


if __name__ == "__main__":
    main()
