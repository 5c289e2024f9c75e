"""Fills the accuracy suite's scipy reference cache (tests/conftest.py: scipy_reference) for
every USC-SIPI image and kernel size in parallel processes, so that a GPU run of
tests/test_accuracy.py does not spend its time in single-threaded scipy.

    python3 scripts/warm_scipy_refs.py [processes]"""
import os
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from conftest import scipy_reference  # noqa: E402
from test_accuracy import KERNEL_SIZES  # noqa: E402

from tensorconv.datasets import load_usc_sipi  # noqa: E402


def one(job):
    name, image, k = job
    scipy_reference(name, image, k)
    return name, k


def main():
    jobs = [(n, im, k) for n, im in load_usc_sipi() for k in KERNEL_SIZES]
    jobs.sort(key=lambda j: -j[1].size * j[2] ** 2)  # largest first
    n = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count()
    with ProcessPoolExecutor(n) as ex:
        for _ in ex.map(one, jobs):
            pass
    print(f"{len(jobs)} references cached")


if __name__ == "__main__":
    main()
