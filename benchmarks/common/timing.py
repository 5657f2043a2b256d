"""The benchmark timer: device time of a callable, in microseconds.

`cuda_time_us(fn)` calls fn `warmup` times, then `reps` times records a CUDA
event, calls fn `inner` times back to back and records another event; it
returns the median over the reps of the elapsed time divided by `inner`
(per call, microseconds). The events are torch's or cupy's, recorded on
`stream`: a torch.cuda.Stream, a cupy.cuda.Stream, or None for the legacy
default stream (torch's events when torch is importable, else cupy's; both
libraries launch there by default).

`cuda_time_us(fn, ahead=True)` starts each timing behind a ~1 ms spin
kernel (torch), so the calls are queued before the first event: the device
time alone, without the first call's host time.

`copy_bandwidth(device)` is a device-to-device copy's bytes per second,
the denominator of the benchmarks' "of copy".

`interleaved_time_us(fns)` times several callables in alternating rounds
(contiguous against strided, plain against cascade) and gives each its
median over the rounds.

`graph_time_us(launch)` captures `inner` calls of launch() (cupy launches on
the capturing stream) in one CUDA graph and times its replay with
cuda_time_us, per call: host launch overhead stays out of the number.

`ClockSampler()` (a context manager) samples the SM clock (MHz) and the
board power (W) through NVML every few milliseconds while its block runs;
`.summary()` gives their medians ("" where NVML is not importable): a
kernel's rate is only comparable with another's at the clocks both ran at
(a board at its power limit lowers them, more for operands with more bits
set).

`finish_or_exit(what, seconds)` waits for the work queued so far on the
default stream, and ends the process (exit status 3, a HANG line naming
`what`) if it has not finished after `seconds` (default: the environment's
CASCADE_HANG_TIMEOUT_S, else 60; raise it under compute-sanitizer, which
slows kernels down a hundredfold): a kernel that never returns
(a pipeline deadlock) cannot be interrupted, and would otherwise hold the
benchmark until the machine's time limit.
"""
import os
import statistics
import sys
import time


class ClockSampler:
    """Median SM clock and board power while the `with` block runs (NVML,
    device index `index`; without pynvml, `nvidia-smi -lms` every 20 ms
    where it is on PATH; else nothing)."""

    def __init__(self, index=0, period_s=0.005):
        self.index, self.period_s = index, period_s
        self.clocks, self.watts = [], []
        self._smi = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # noqa: BLE001 - no NVML: nvidia-smi, or nothing
            self._nvml = None

    def _run(self):
        n = self._nvml
        while not self._stop.is_set():
            self.clocks.append(n.nvmlDeviceGetClockInfo(self._handle, n.NVML_CLOCK_SM))
            self.watts.append(n.nvmlDeviceGetPowerUsage(self._handle) / 1000.0)
            self._stop.wait(self.period_s)

    def __enter__(self):
        if self._nvml:
            import threading
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
            return self
        import shutil
        import subprocess
        smi = shutil.which("nvidia-smi")
        if smi:
            self._smi = subprocess.Popen(
                [smi, f"--id={self.index}", "--query-gpu=clocks.sm,power.draw",
                 "--format=csv,noheader,nounits", "-lms", "20"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return self

    def __exit__(self, *exc):
        if self._nvml:
            self._stop.set()
            self._thread.join()
        elif self._smi:
            self._smi.terminate()
            out, _ = self._smi.communicate()
            for line in out.splitlines():
                try:
                    mhz, watts = (float(v) for v in line.split(","))
                except ValueError:
                    continue
                self.clocks.append(mhz)
                self.watts.append(watts)
        return False

    def summary(self):
        """'@ <MHz> MHz <W> W' (medians), or '' when nothing was sampled."""
        if not self.clocks:
            return ""
        return (f"@ {statistics.median(self.clocks):.0f} MHz "
                f"{statistics.median(self.watts):.0f} W")


def _is_cupy_stream(stream):
    return type(stream).__module__.split(".")[0] == "cupy"


class _TorchEvents:
    def __init__(self, stream):
        import torch
        self.torch = torch
        self.stream = stream

    def record(self):
        e = self.torch.cuda.Event(enable_timing=True)
        if self.stream is None:
            e.record()
        else:
            e.record(self.stream)
        return e

    def spin(self, cycles=2_000_000):
        """A kernel that spins for `cycles` clocks (~1 ms) on the stream."""
        with self.torch.cuda.stream(self.stream or self.torch.cuda.current_stream()):
            self.torch.cuda._sleep(cycles)

    def sync(self):
        if self.stream is None:
            self.torch.cuda.synchronize()
        else:
            self.stream.synchronize()

    @staticmethod
    def elapsed_us(a, z):
        z.synchronize()
        return a.elapsed_time(z) * 1e3

    @staticmethod
    def finished(e):
        return e.query()


class _CupyEvents:
    def __init__(self, stream):
        import cupy
        self.cp = cupy
        self.stream = stream

    def record(self):
        e = self.cp.cuda.Event()
        e.record(self.stream)
        return e

    def sync(self):
        if self.stream is None:
            self.cp.cuda.runtime.deviceSynchronize()
        else:
            self.stream.synchronize()

    def elapsed_us(self, a, z):
        z.synchronize()
        return self.cp.cuda.get_elapsed_time(a, z) * 1e3

    @staticmethod
    def finished(e):
        return e.done


def finish_or_exit(what, seconds=None, backend=None):
    """backend: "cupy" or "torch" for that library's events, None for
    torch's where it imports (as cuda_time_us)."""
    if seconds is None:
        seconds = float(os.environ.get("CASCADE_HANG_TIMEOUT_S", "60"))
    if backend:
        ev = {"cupy": _CupyEvents, "torch": _TorchEvents}[backend](None)
    else:
        ev = _events(None)
    done = ev.record()
    deadline = time.monotonic() + seconds
    while not ev.finished(done):
        if time.monotonic() > deadline:
            print(f"HANG: {what} did not finish within {seconds:.0f} s", flush=True)
            sys.stderr.flush()
            os._exit(3)
        time.sleep(0.005)


def _events(stream):
    if stream is not None:
        return _CupyEvents(stream) if _is_cupy_stream(stream) else _TorchEvents(stream)
    try:
        import torch  # noqa: F401 - only whether it imports
        return _TorchEvents(None)
    except ImportError:
        return _CupyEvents(None)


def cuda_time_us(fn, *, reps=20, warmup=3, inner=1, stream=None, ahead=False):
    """Median over `reps` of the device time of `inner` back-to-back calls of
    fn between two CUDA events on `stream`, per call, in microseconds.

    ahead=True (torch's events only): each timing starts behind a ~1 ms
    spin kernel, so that the host has queued the calls before the first
    event fires and the time is the device's alone (without it, the first
    call's host time is part of every timing)."""
    if reps < 1 or inner < 1 or warmup < 0:
        raise ValueError("reps and inner must be >= 1, warmup >= 0")
    ev = _events(stream)
    if ahead and not isinstance(ev, _TorchEvents):
        raise ValueError("ahead=True needs torch (its spin kernel)")
    for _ in range(warmup):
        fn()
    ev.sync()
    ts = []
    for _ in range(reps):
        if ahead:
            ev.spin()
        a = ev.record()
        for _ in range(inner):
            fn()
        z = ev.record()
        ts.append(ev.elapsed_us(a, z) / inner)
    return float(statistics.median(ts))


def copy_bandwidth(device="cuda", *, ahead=False, nbytes=1 << 30):
    """Device-to-device copy bandwidth of a torch tensor of `nbytes`, in
    bytes read + written per second (cuda_time_us: 10 timings; `ahead` as
    there)."""
    import torch
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    us = cuda_time_us(lambda: dst.copy_(src), reps=10, warmup=2, ahead=ahead)
    return 2 * nbytes / (us * 1e-6)


def interleaved_time_us(fns, *, rounds=9, reps=10, warmup=3):
    """cuda_time_us of each of `fns` (reps calls a round, warmup before the
    first), over `rounds` alternating rounds, so that clock and thermal
    drift fall on all of them alike: the median over the rounds of each, in
    microseconds, in the order of `fns`."""
    for fn in fns:
        cuda_time_us(fn, reps=1, warmup=warmup)
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            samples[i].append(cuda_time_us(fn, reps=reps, warmup=1))
    return [float(statistics.median(t)) for t in samples]


def graph_time_us(launch, *, inner=10, reps=20, warmup=1):
    """Per-call device time (us) of `launch()` (cupy launches on the current
    stream), `inner` calls captured in a CUDA graph on a fresh stream and the
    graph replayed with cuda_time_us. If capture fails, the plain launches
    are timed instead (and a line says so)."""
    import cupy as cp
    # Inputs may have been written on the default stream: make them visible.
    cp.cuda.runtime.deviceSynchronize()
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        launch()
        st.synchronize()
        try:
            st.begin_capture()
            for _ in range(inner):
                launch()
            g = st.end_capture()
            return cuda_time_us(lambda: g.launch(st), reps=reps, warmup=warmup,
                                stream=st) / inner
        except Exception as ex:  # noqa: BLE001 - fall back, but say so
            if st.is_capturing():
                st.end_capture()
            print(f"(graph capture failed: {ex}; timing plain launches)", flush=True)
            return cuda_time_us(launch, reps=reps, warmup=warmup, inner=inner, stream=st)
