"""Jobs, the run store and the executors (memrl.jobs, memrl.runs): keys, atomic results, resume,
failures, clean interrupts, and the Ray executor's identical results."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from memrl.executors import JobsFailed, execute
from memrl.jobs import JobSpec
from memrl.runs import MissingRunsError, RunStore

HERE = Path(__file__).parent


def spec(fn: str, **kw) -> JobSpec:
    return JobSpec(f"toy_jobs:{fn}", kw, label=f"{fn} {kw.get('x')}")


def test_key_is_stable_and_depends_on_function_arguments_and_code():
    a = JobSpec("m:f", {"b": 1, "a": [1, 2.5]}, cost=3)
    assert a.key == JobSpec("m:f", {"a": [1, 2.5], "b": 1}, cost=99, label="x").key  # order, cost
    assert a.key == "adc68d684e382fcc49eb"  # stable across processes and machines (the kernel set
    # is in every key: it moved with memrl.openblas, 2026-12-02)
    assert a.key != JobSpec("m:f", {"b": 2, "a": [1, 2.5]}).key
    assert a.key != JobSpec("m:g", {"b": 1, "a": [1, 2.5]}).key
    assert a.key != JobSpec("m:f", {"b": 1, "a": [1, 2.5]}, code="abc").key


def test_the_pinned_instruction_set_is_part_of_the_key(monkeypatch):
    """A run computed with other kernels is another result: never reused as this one."""
    key = JobSpec("m:f", {"x": 1}).key
    monkeypatch.setattr("memrl.isa.KEY", "x86-64-v2:0")
    assert JobSpec("m:f", {"x": 1}).key != key


@pytest.mark.parametrize(
    "kwargs, message",
    [({"x": object()}, "JSON values"), ({"x": float("nan")}, "NaN"), ({"x": {1: 2}}, "strings")],
)
def test_bad_arguments_fail_when_the_spec_is_made(kwargs, message):
    with pytest.raises(TypeError, match=message):
        JobSpec("m:f", kwargs)
    with pytest.raises(ValueError, match="module:function"):
        JobSpec("f", {})


def test_store_runs_only_missing_jobs_and_keeps_files(tmp_path):
    store = RunStore(tmp_path / "runs")
    specs = [spec("square", x=i) for i in range(4)]
    r1 = execute(specs[:2], store, workers=1)
    assert (r1.ran, r1.skipped) == (2, 0)
    r2 = execute(specs, store, workers=2)
    assert (r2.ran, r2.skipped) == (2, 2)
    assert [r["y"] for r in store.results(specs)] == [0, 1, 4, 9]
    f = spec("with_files", x=7)
    execute([f], store, workers=1)
    (res,) = store.results([f])
    assert Path(res["files_dir"], "note.txt").read_text() == "job 7"
    assert Path(res["files_dir"], "raw.bin").read_bytes() == bytes([7, 0, 255])

    store.prune(specs[:1])
    assert store.keys() == {specs[0].key}
    with pytest.raises(MissingRunsError, match="1 of 2 runs missing"):
        store.results(specs[:2])


def test_a_timing_job_runs_alone_after_the_others(tmp_path):
    """``alone`` jobs (wall-clock measurements) start once every other job has finished and
    run with none beside them, even when they cost the most and workers are free."""
    store = RunStore(tmp_path / "runs")
    timing = JobSpec("toy_jobs:window", {"x": 9, "seconds": 0.3}, cost=100.0, alone=True)
    others = [JobSpec("toy_jobs:window", {"x": i, "seconds": 0.3}) for i in range(3)]
    execute([timing, *others], store, workers=2)
    t, *rest = store.results([timing, *others])
    assert t["start"] >= max(r["end"] for r in rest)
    assert t["pid"] == os.getpid()  # in this process: no pool worker is left beside it
    assert len({r["pid"] for r in rest} - {os.getpid()}) >= 1  # the others ran in the pool
    again = JobSpec("toy_jobs:window", {"x": 8, "seconds": 0.0}, alone=True)
    assert execute([again], store, workers=2).ran == 1  # alone jobs only: no empty pool


def test_a_job_is_priced_by_the_cpu_time_its_process_used(tmp_path):
    """Wall time counts whatever else held the cores; a job's price is the CPU time its own
    process used (a sleeping job: ~0 of its 0.3 s), and a record without it, older than the
    field, is priced by its wall seconds."""
    from memrl.runs import core_seconds, rates, timings

    store = RunStore(tmp_path)
    kw = {"x": 1, "seconds": 0.3, "log_dir": str(tmp_path)}
    job = JobSpec("toy_jobs:slow", kw, cost=2.0, label="slow · seed 1")
    execute([job], store, workers=1)
    rec = store.load(job)
    assert rec["seconds"] >= 0.3 and 0.0 <= rec["cpu_seconds"] < 0.2
    assert "_cpu_seconds" not in rec["result"]
    assert core_seconds(rec) == rec["cpu_seconds"]
    older = {k: v for k, v in rec.items() if k != "cpu_seconds"}
    assert core_seconds(older) == rec["seconds"]
    assert rates([rec])["slow"] == [rec["cpu_seconds"] / 2.0]
    assert timings([older])["groups"]["slow"]["core_seconds"] == round(rec["seconds"], 1)


def test_a_store_in_the_project_names_its_files_relative_to_it(tmp_path, monkeypatch):
    """Published tables carry no machine's paths: files_dir is relative to the project."""
    from memrl import runs

    monkeypatch.setattr(runs, "repo_root", lambda: tmp_path)
    store = RunStore(tmp_path / "results" / "default" / "fam" / "runs")
    f = spec("with_files", x=7)
    execute([f], store, workers=1)
    (res,) = store.results([f])
    assert res["files_dir"] == f"results/default/fam/runs/{f.key}"
    assert (tmp_path / res["files_dir"] / "note.txt").read_text() == "job 7"


def test_a_corrupt_or_foreign_result_is_rerun_with_a_word(tmp_path, capsys):
    store = RunStore(tmp_path)
    s = spec("square", x=3)
    execute([s], store, workers=1)
    store.path(s).write_text('{"version": 1, "key": "x')  # a torn write by another tool
    assert not store.has(s)
    assert execute([s], store, workers=1).ran == 1 and store.has(s)
    assert (
        f"unreadable or from another store version (e.g. {s.key}.json)" in capsys.readouterr().err
    )


def test_a_failing_job_is_reported_and_the_others_are_kept(tmp_path):
    store = RunStore(tmp_path)
    specs = [spec("fail_on", x=i, bad=2) for i in range(5)]
    with pytest.raises(JobsFailed) as err:
        execute(specs, store, workers=2)
    msg = str(err.value)
    assert "1 of 5 jobs failed" in msg and "job 2 is broken" in msg and "fail_on 2" in msg
    assert store.keys() == {s.key for i, s in enumerate(specs) if i != 2}


def test_unknown_executor_or_function_fails_clearly(tmp_path):
    with pytest.raises(ValueError, match="unknown executor"):
        execute([spec("square", x=1)], RunStore(tmp_path), executor="slurm")
    report = execute(
        [JobSpec("toy_jobs:nope", {})], RunStore(tmp_path), workers=1, raise_on_failure=False
    )
    assert "cannot find job function" in report.failures[0][1]


INTERRUPTED = textwrap.dedent(
    """
    import sys
    from memrl.jobs import JobSpec
    from memrl.executors import execute, raise_on_sigterm
    from memrl.runs import RunStore
    raise_on_sigterm()
    store, logs = RunStore(sys.argv[1]), sys.argv[2]
    specs = [JobSpec("toy_jobs:slow", {"x": i, "seconds": 0.2 if i < 2 else 60, "log_dir": logs})
             for i in range(6)]
    report = execute(specs, store, workers=2)
    print(report.ran, report.skipped)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


def _still_alive(pids: set[int], guard: float = 60.0) -> list[int]:
    """The ``pids`` still running once they have had ``guard`` seconds to exit (they exit
    at once when all is well; the wait only spares a loaded machine a false alarm)."""
    deadline = time.time() + guard
    while (alive := [p for p in pids if _alive(p)]) and time.time() < deadline:
        time.sleep(0.1)
    return alive


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigterm_stops_every_worker_and_a_rerun_resumes(tmp_path):
    store, logs = tmp_path / "runs", tmp_path / "logs"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", INTERRUPTED, str(store), str(logs)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 600  # a hang guard, not a speed bound
    while len(RunStore(store).keys()) < 2 or len(list(logs.glob("*.pid"))) < 4:
        assert time.time() < deadline, proc.stderr.read().decode() if proc.poll() else "stuck"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=600) != 0  # a hang guard
    workers = {int(p.stem.split("-")[1]) for p in logs.glob("*.pid")}
    assert not _still_alive(workers), "workers outlived the interrupted run"
    assert len(RunStore(store).keys()) == 2  # the two finished jobs, nothing half-written
    assert not [p for p in store.iterdir() if p.name.startswith(".")]
    # a second run executes only the unfinished jobs (made short this time)
    rerun = INTERRUPTED.replace("60", "0.1")
    out = subprocess.run(
        [sys.executable, "-c", rerun, str(store), str(logs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard
        check=True,
    )
    assert out.stdout.split() == ["4", "2"]


def test_ray_executor_gives_the_process_pools_results(tmp_path):
    """Experience replay's smoke jobs (the two cheapest of two job functions, one per
    worker) on a local Ray instance."""
    pytest.importorskip("ray")
    from memrl import families
    from memrl.families import load_family

    fam = families.get("experience_replay")
    grid = sorted(fam.grid(load_family("experience_replay", "smoke")), key=lambda s: s.cost)
    specs = [s for s in grid if "q_replay" in s.fn][:2] + [s for s in grid if "her_job" in s.fn][:2]
    a, b = RunStore(tmp_path / "pool"), RunStore(tmp_path / "ray")
    execute(specs, a, executor="process", workers=2)
    temp = Path(tempfile.gettempdir())

    def theirs() -> set[str]:  # what Ray (its session folder) or SB3 (log folders) would leave
        return {p.name for p in temp.iterdir() if p.name.startswith(("memrl-ray-", "ray", "SB3-"))}

    before = theirs()
    assert execute(specs, b, executor="ray", workers=2).ran == len(specs)
    # the local instance's session folder is ours and gone once it stops; SB3 made none
    assert theirs() - before == set()
    for s in specs:
        ra, rb = json.loads(a.path(s).read_text()), json.loads(b.path(s).read_text())
        assert ra["result"] == rb["result"] and ra["spec"] == rb["spec"]


STAGE = textwrap.dedent(
    """
    import sys
    from memrl.jobs import JobSpec
    from memrl.executors import execute, raise_on_sigterm
    from memrl.runs import RunStore

    if __name__ == "__main__":  # the pool's spawned workers import this file
        raise_on_sigterm()
        specs = [JobSpec("toy_jobs:slow", {"x": i, "seconds": 0.2 if i < 2 else 60,
                                          "log_dir": "logs"}) for i in range(6)]
        try:
            execute(specs, RunStore("runs"), workers=2)
        except KeyboardInterrupt:
            sys.exit(130)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigterm_to_the_repro_wrapper_stops_dvc_its_stage_and_the_workers(tmp_path):
    """`make repro` runs `python -m memrl repro` (exec'd, so make's SIGTERM reaches
    it): a DVC stage with pool workers is stopped, and nothing it started is left."""
    import shutil

    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    env = {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "PATH": f"{Path(dvc).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
    }
    (tmp_path / "stage.py").write_text(STAGE)
    (tmp_path / "logs").mkdir()
    (tmp_path / "results" / "smoke").mkdir(parents=True)  # where the smoke pipeline lives
    (tmp_path / "results" / "smoke" / "dvc.yaml").write_text(
        "stages:\n  work:\n    wdir: ../..\n    cmd: python stage.py\n    deps: [stage.py]\n"
        "    outs: [{runs: {persist: true}}]\n"
    )
    for cmd in (["git", "init", "-q"], [dvc, "init", "-q"]):
        subprocess.run(cmd, cwd=tmp_path, env=env, check=True, capture_output=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memrl", "repro", "--profile", "smoke"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 600  # a hang guard, not a speed bound
    while (
        len(RunStore(tmp_path / "runs").keys()) < 2 or len(list((tmp_path / "logs").glob("*"))) < 4
    ):
        assert time.time() < deadline and proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=600)[0].decode()  # a hang guard
    assert proc.returncode == 128 + signal.SIGTERM, out
    workers = {int(p.stem.split("-")[1]) for p in (tmp_path / "logs").glob("*.pid")}
    assert not _still_alive(workers), "workers outlived the interrupted repro"
    left = subprocess.run(["pgrep", "-f", "stage.py"], capture_output=True, text=True).stdout
    assert not left.strip(), f"stage processes left: {left}"
    assert len(RunStore(tmp_path / "runs").keys()) == 2 and "make repro` resumes" in out


def test_a_gpu_run_has_keys_of_its_own_and_the_cpus_keys_stay(monkeypatch):
    import hashlib

    from memrl import isa, jobs

    spec = jobs.JobSpec("tests.toy_jobs:square", {"x": 3})
    old = {"fn": spec.fn, "kwargs": spec.kwargs, "code": spec.code, "isa": isa.KEY}
    monkeypatch.setattr(jobs, "_device", lambda: "cpu")
    assert spec.key == hashlib.sha256(jobs._canonical(old).encode()).hexdigest()[:20]
    cpu = spec.key
    monkeypatch.setattr(jobs, "_device", lambda: "cuda")
    assert spec.key != cpu
