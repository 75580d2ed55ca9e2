"""Ctrl-C (SIGINT) and SIGTERM during a fit or while a report is written: no output file is
left, whole or partial, and the command ends in one line (issue 50, part 3).

Real signals, sent to a real process: during the fit to a separate process running the
command line or the API (sent once the sampler has made its first draw, while it still
runs), during the write by the process to itself from inside the writer (the write's
window is too short to hit from outside).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import warnings
import weakref
from pathlib import Path

import numpy as np
import pytest

from bayesrank import ResponseData, save
from bayesrank.cli import main
from bayesrank.data.interrupts import Terminated

SIGNALS = [signal.SIGINT, signal.SIGTERM]
ONE_LINE = {signal.SIGINT: ("bayesrank: interrupted", 130),
            signal.SIGTERM: ("bayesrank: terminated", 143)}


@pytest.fixture(autouse=True)
def pythons_own_ctrl_c():
    """SIGINT handled as Python sets it up in a terminal (KeyboardInterrupt), here and in the
    processes the tests start: a test run that a shell without job control started in the
    background (``make test &``) inherits SIGINT ignored, and Python keeps it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def data_file(tmp_path):
    R = np.random.default_rng(0).integers(0, 2, (4, 10, 3))
    return save(ResponseData(R), tmp_path / "d.npz")


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "d.npz")


# a harness: run the fit (the command line or the API), saying "sampling" on stdout at the
# sampler's first draw (PyMC's per-draw callback), so that the signal comes while it samples
_HARNESS = """
import sys
import pymc as pm
import bayesrank.inference as inference
real = pm.sample
def announced(*args, **kwargs):
    said = []
    def first_draw(trace, draw):
        if not said:
            said.append(print("sampling", flush=True))
    return real(*args, callback=first_draw, **kwargs)
pm.sample = announced
data, out, how = sys.argv[1:4]
if how == "cli":
    from bayesrank.cli import main
    sys.exit(main(["report", data, "--model", "rasch", "--sampler", "pymc", "--chains", "1",
                   "--draws", "200000", "--tune", "10", "-o", out,
                   "--save-posterior", out + ".nc"]))
import bayesrank
from bayesrank.report import write_report
try:
    post = inference.fit(bayesrank.load(data), "rasch", sampler="pymc", chains=1, draws=200000,
                         tune=10, progressbar=False)
    write_report(post, out)
except KeyboardInterrupt as exc:
    print(f"KeyboardInterrupt: {exc}", file=sys.stderr)
    sys.exit(130)
"""


def _ending(stderr: str) -> list[str]:
    """stderr's last line, after only the progress stage lines (``bayesrank: [  1.2 s]
    ...``) that the command line prints as it works (blank lines aside)."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert all(line.startswith("bayesrank: [") for line in lines[:-1]), lines
    return lines[-1:]


def _signal_during_fit(data_file: Path, how: str, signum: int) -> subprocess.CompletedProcess:
    out = data_file.parent / "r.html"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    # stderr to a file, never a pipe that nobody reads; read back through its own handle
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "stderr"
        with log.open("w") as errors:
            proc = subprocess.Popen([sys.executable, "-c", _HARNESS, str(data_file), str(out),
                                     how], stdout=subprocess.PIPE, stderr=errors, text=True,
                                    env=env)
        try:
            # a signal sent at a fixed delay landed, on a loaded machine, while libraries
            # imported or the model compiled, and was lost there (a half-imported jax; a fit
            # that ran on); the wait for the first draw has a deadline, as every wait here
            ready, _, _ = select.select([proc.stdout], [], [], 300)
            first = proc.stdout.readline() if ready else "(nothing within 300 s)"
            assert first.strip() == "sampling", log.read_text()[-2000:]
            time.sleep(0.5)  # 10 warm-up and 200000 draws: the fit is still sampling
            proc.send_signal(signum)
            stdout, _ = proc.communicate(timeout=300)
        finally:
            proc.kill()
            proc.wait()
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, log.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_the_command_lines_fit_ends_in_one_line(data_file, signum):
    done = _signal_during_fit(data_file, "cli", signum)
    line, code = ONE_LINE[signum]
    assert done.returncode == code, done.stderr[-2000:]
    assert _ending(done.stderr) == [line]
    assert _leftovers(data_file.parent) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_an_api_fit_leaves_nothing(data_file, signum):
    """Ctrl-C: fit() raises KeyboardInterrupt (with a one-line message saying how far it
    got once sampling began); SIGTERM: the process ends by SIGTERM, as any Python process
    does."""
    done = _signal_during_fit(data_file, "api", signum)
    if signum == signal.SIGINT:
        assert done.returncode == 130, done.stderr[-2000:]
        last = done.stderr.strip().splitlines()[-1]
        assert last == "KeyboardInterrupt:" or last.startswith(
            "KeyboardInterrupt: sampling interrupted after")
    else:
        assert done.returncode == -signal.SIGTERM, done.stderr[-2000:]
    assert _leftovers(data_file.parent) == []


def _signal_while_writing(monkeypatch, signum: int) -> None:
    """Make every text write put half its text on disk, then receive ``signum``."""
    real = Path.write_text

    def half_then_signal(self, text, *args, **kwargs):
        real(self, text[: len(text) // 2], *args, **kwargs)
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the signal's handler raises here
        raise AssertionError("the signal did not stop the write")

    monkeypatch.setattr(Path, "write_text", half_then_signal)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_the_command_line_writes_a_report(capsys, monkeypatch, tmp_path, signum):
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    _signal_while_writing(monkeypatch, signum)
    code = main(["report", "--model", "closed_form", "-o", str(tmp_path / "r.html")])
    line, expected = ONE_LINE[signum]
    assert code == expected
    assert _ending(capsys.readouterr().err) == [line]
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the CLI put it back


def test_ctrl_c_while_the_api_writes_a_report(monkeypatch, tmp_path):
    import bayesrank
    from bayesrank.report import write_report

    post = bayesrank.closed_form(ResponseData(np.random.default_rng(1).integers(0, 2, (3, 6, 2))))
    _signal_while_writing(monkeypatch, signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        write_report(post, tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


_API_WRITE = """
import os, signal, sys, time
from pathlib import Path
import numpy as np
import bayesrank
from bayesrank.report import write_report
post = bayesrank.closed_form(bayesrank.ResponseData(np.ones((3, 6, 2), dtype=int)))
real = Path.write_text
def half_then_signal(self, text, *args, **kwargs):
    real(self, text[: len(text) // 2], *args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    sys.exit(3)  # SIGTERM did not end the process
Path.write_text = half_then_signal
write_report(post, sys.argv[1])
sys.exit(4)
"""


def test_sigterm_while_the_api_writes_a_report(tmp_path):
    """The process still ends by SIGTERM (a library does not change what SIGTERM does to
    its caller), but only after the temporary file is gone."""
    done = subprocess.run([sys.executable, "-c", _API_WRITE, str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGTERM, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


class _SignalledWhileFreed:
    """An object whose finalizer receives a signal (as Numba's does when the signal lands
    while it frees compiled code): an exception raised there would be dropped."""

    def __init__(self, signum: int):
        self.signum = signum

    def __del__(self):
        _signal_and_wait(self.signum)


def _signal_and_wait(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.2)  # the handler runs here, inside the finalizer


def _freed_by_del(signum: int) -> None:
    obj = _SignalledWhileFreed(signum)
    del obj  # __del__ runs and returns


def _freed_by_weakref_callback(signum: int) -> None:
    # what failed under load: numba's type cache drops types from a weakref callback
    class Thing:
        pass

    obj = Thing()
    ref = weakref.ref(obj, lambda _: _signal_and_wait(signum))
    del obj
    assert ref() is None


@pytest.mark.parametrize("free", [_freed_by_del, _freed_by_weakref_callback],
                         ids=["__del__", "weakref-callback"])
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_that_lands_in_a_finalizer_is_not_lost(signum, free, capsys):
    from bayesrank.data.interrupts import sigterm_as_interrupt

    hook = sys.unraisablehook
    expected = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    with pytest.raises(expected), sigterm_as_interrupt(ctrl_c=True):
        free(signum)  # the interrupt raised in the finalizer is dropped by Python
        time.sleep(2)  # ... and delivered again here
        raise AssertionError("the signal was dropped in the finalizer")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook
    assert "Exception ignored" not in capsys.readouterr().err  # sent again, not printed


@pytest.mark.parametrize("free", [_freed_by_del, _freed_by_weakref_callback],
                         ids=["__del__", "weakref-callback"])
def test_ctrl_c_that_python_drops_in_a_finalizer_still_stops_the_api(free, capsys):
    """In a Python session (Python's own SIGINT handler, which bayesrank leaves as it is),
    fit samples inside interrupts_not_dropped: a KeyboardInterrupt dropped in a finalizer
    is sent again and stops the work."""
    from bayesrank.data.interrupts import interrupts_not_dropped

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    hook = sys.unraisablehook
    with pytest.raises(KeyboardInterrupt), interrupts_not_dropped():
        free(signal.SIGINT)  # Python's KeyboardInterrupt raised in the finalizer is dropped
        time.sleep(2)  # ... and SIGINT arrives again here
        raise AssertionError("the interrupt was dropped in the finalizer")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook
    assert "Exception ignored" not in capsys.readouterr().err


def test_fit_samples_with_dropped_interrupts_sent_again(monkeypatch):
    from bayesrank.inference import fitting

    seen = []
    real = fitting.sample

    def recording(*args, **kwargs):
        seen.append(sys.unraisablehook)
        return real(*args, **kwargs)

    monkeypatch.setattr(fitting, "sample", recording)
    hook = sys.unraisablehook
    R = np.random.default_rng(0).integers(0, 2, (3, 5, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 exact draws: below the ESS check, by design
        fitting.fit(ResponseData(R), "bayes", draws=20, chains=1, random_seed=0)
    assert seen and seen[0] is not hook and seen[0].__qualname__.startswith(
        "_redeliver_if_dropped")
    assert sys.unraisablehook is hook


def test_ctrl_c_during_pymcs_warm_up_is_an_interrupt(monkeypatch):
    """PyMC keeps the draws made when Ctrl-C stops it; during warm-up there are none and
    it raises ``ValueError("Not enough samples to build a trace.")``: fit raises the
    interrupt instead (the interrupt comes from PyMC's own per-draw callback)."""
    import pymc as pm

    import bayesrank

    def stop_in_warm_up(trace, draw):
        if draw.tuning and draw.draw_idx == 3:
            raise KeyboardInterrupt

    real = pm.sample
    monkeypatch.setattr(pm, "sample", lambda *a, **k: real(*a, callback=stop_in_warm_up, **k))
    R = np.random.default_rng(1).integers(0, 2, (3, 6, 2))
    with pytest.raises(KeyboardInterrupt, match=r"^sampling interrupted after 0 of 50 draws$"):
        bayesrank.fit(ResponseData(R), "rasch", sampler="pymc", chains=1, tune=20, draws=50,
                      progressbar=False)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), Terminated("terminated by SIGTERM")],
                         ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_that_numba_reports_as_a_system_error_stays_an_interrupt(interrupt):
    """A signal handled while PyMC's compiled log-density runs leaves Numba's dispatcher as
    ``SystemError(... returned a result with an exception set)`` caused by the interrupt,
    directly or through Numba's unpickler's own SystemError (both seen with real signals in
    the tests above, about one run in ten): the sampler raises the interrupt itself,
    SIGTERM's included, so the command line ends in its one line."""
    from bayesrank.inference.backends import _interrupt_raised

    with pytest.raises(type(interrupt)) as raised, _interrupt_raised(100):
        raise SystemError("CPUDispatcher(<function f>) returned a result with an exception "
                          "set") from interrupt
    assert raised.value is interrupt
    with pytest.raises(type(interrupt)) as raised, _interrupt_raised(100):
        try:
            raise SystemError("<function _numba_unpickle> returned a result with an "
                              "exception set") from interrupt
        except SystemError as inner:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an "
                              "exception set") from inner
    assert raised.value is interrupt
    with pytest.raises(SystemError), _interrupt_raised(100):
        raise SystemError("another fault") from ValueError("not an interrupt")
