"""The red-team run of docs/reliability.md: hostile cases against the real CLI, store and embedder.

    .venv/bin/python scripts/redteam.py [--only NAME[,NAME]] [--keep DIR]

Each case gets a fresh copy of examples/notes, does one hostile thing, runs the commands a user
would (the CLI in process, ``localrag.cli.main``, with one shared embedder; a child process where
the case needs one: SIGKILL, another user), and checks three things: the commands behaved (exit
code, one-line errors, no traceback), nothing was lost (every readable note is indexed once the
cause is gone), and the index passes what `localrag doctor` checks (``PRAGMA integrity_check``)
plus the 19 consistency checks of tests/reliability_checks.py. Cases that need root (a small
tmpfs for "disk full", another user for "read-only") say so and are skipped without it.
Prints one Markdown table row per case; exit 1 if any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from reliability_checks import check_store  # noqa: E402

import localrag.embed  # noqa: E402
from localrag.cli import main as cli_main  # noqa: E402
from localrag.ingest import loaders  # noqa: E402
from localrag.ingest import sync as sync_module  # noqa: E402
from localrag.store import Store  # noqa: E402
from localrag.store.health import state_path  # noqa: E402

EXAMPLES = REPO / "examples" / "notes"
N_EXAMPLES = sum(1 for _ in EXAMPLES.rglob("*.md"))


@dataclass
class Outcome:
    ok: bool
    result: str


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    @property
    def clean_error(self) -> bool:
        """Exit non-zero with exactly one line on stderr and no traceback."""
        lines = self.err.strip().splitlines()
        return self.code != 0 and len(lines) == 1 and "Traceback" not in self.err


def cli(*argv: str) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main([str(a) for a in argv])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Run(code, out.getvalue(), err.getvalue())


def cli_process(*argv: str, user: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    env["PYTHONPATH"] = str(REPO)
    cmd = [sys.executable, "-m", "localrag", *map(str, argv)]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
        env["HOME"] = "/tmp"
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd="/")


def _index_of(folder: Path) -> Store:
    return Store.open_for_reading(folder / ".localrag" / "index.db")


def indexed(folder: Path) -> set[str]:
    with closing(_index_of(folder)) as store:
        return set(store.docs.all())


def skipped(folder: Path) -> dict[str, str]:
    with closing(_index_of(folder)) as store:
        return {s.path: s.reason for s in store.docs.skipped()}


def text_of(folder: Path, rel: str) -> str:
    """The indexed text of one note ("" when it is not indexed)."""
    with closing(_index_of(folder)) as store:
        return "\n".join(p.text for p in store.docs.passages_of(rel))


def index(folder: Path, *extra: str) -> Run:
    return cli("index", folder, "--no-graph", "--quiet", *extra)


@contextlib.contextmanager
def after_walk(action: Callable[[], None]):
    """Run ``action`` between the folder walk and the reads (the window a hostile change needs)."""
    real = sync_module.walk

    def walk(*a, **kw):
        found = real(*a, **kw)
        action()
        return found

    sync_module.walk = walk
    try:
        yield
    finally:
        sync_module.walk = real


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


# -- names, missing and wrong paths, damage, arguments, links, the summary ----------------------------

def case_undecodable_name(d: Path) -> str:
    with open(os.fsencode(d) + b"/x\xff.md", "wb") as fh:
        fh.write(b"# x\nhi\n")
    r = index(d)
    expect(r.code == 0, f"index exit {r.code}: {r.err}")
    docs = indexed(d)
    expect(len(docs) == N_EXAMPLES + 1 and "x\\xff.md" in docs, f"{len(docs)} documents")
    r = cli("ask", "hi", "-f", d, "--no-answer", "--strategy", "lexical")
    expect(r.code == 0 and "x\\xff.md" in r.out, r.err)
    return f"exit 0; all {len(docs)} notes indexed, the odd one as `x\\xff.md` (maps back to its bytes); ask finds it"


def case_missing_folder(d: Path) -> str:
    missing = d / "no" / "such" / "dir"
    r = cli("index", missing)
    expect(r.code == 2 and r.clean_error and not (d / "no").exists(), f"{r.code} {r.err}")
    s = cli("status", missing)
    expect(s.code == 2 and s.clean_error, s.err)
    return f"exit 2, one line (`{r.err.strip()[:60]}…`), nothing created; status exit 2 too"


def case_random_bytes_in_the_middle(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    db = d / ".localrag" / "index.db"
    with db.open("r+b") as fh:
        fh.seek(db.stat().st_size // 2)
        fh.write(random.Random(3).randbytes(4096))
    codes = []
    for argv in (("status", d), ("index", d, "--no-graph", "--quiet")):
        r = cli(*argv)
        expect(r.clean_error and r.code == 1 and "doctor --repair" in r.err, f"{argv[0]}: {r.code} {r.err}")
        codes.append(f"{argv[0]} exit {r.code}")
    r = cli("doctor", d, "--repair", "--skip-model")
    expect(r.code == 0 and len(indexed(d)) == N_EXAMPLES, f"repair {r.code} {r.out} {r.err}")
    return ", ".join(codes) + " pointing at `doctor --repair`; repair rebuilt all notes"


def case_file_not_folder(d: Path) -> str:
    note = d / "orlinsford.md"
    runs = [cli("index", note), cli("ask", "where?", "-f", note), cli("doctor", note, "--skip-model"),
            cli("status", note)]
    expect(all(r.code == 2 and r.clean_error for r in runs), str([(r.code, r.err) for r in runs]))
    return "index, ask, doctor, status: exit 2, one line each (`… is a file, not a folder …`)"


def case_bad_strategy(d: Path) -> str:
    r = cli("ask", "where?", "-f", d, "--strategy", "nonsense")
    expect(r.code == 2 and r.clean_error and not (d / ".localrag").exists(), r.err)
    return "exit 2, one line naming the choices, before any sync (no index created)"


def case_empty_question(d: Path) -> str:
    r = cli("ask", "  ", "-f", d)
    expect(r.code == 2 and r.clean_error, r.err)
    return "exit 2, one line"


def case_options_before_command(d: Path) -> str:
    db = d.parent / f"{d.name}-elsewhere.db"
    expect(cli("--db", db, "index", d, "--no-graph", "--quiet").code == 0, "index with --db first")
    r = cli("--db", db, "status", d, "--json")
    expect(r.code == 0 and str(db) in r.out, r.err)
    r = cli("--model", d / "no.gguf", "--db", db, "ask", "where?", "-f", d, "--no-sync")
    expect(r.code == 1 and "model file not found" in r.err, r.err)
    return "`--db X status DIR` exit 0 on X; `--model M ask …` reaches ask (M missing: exit 1, one line)"


def case_outside_dir_symlink(d: Path) -> str:
    os.symlink("/usr/share/doc", d / "docs-outside")
    r = index(d)
    s = cli("status", d)
    expect(r.code == 0 and skipped(d).get("docs-outside") == "outside-root" and "docs-outside" in s.out, s.out)
    return "listed by index and status as `outside-root`, not followed"


def case_summary_adds_up(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    (d / "quillhaven.md").write_text("# Quillhaven\n\nEdited.\n")
    (d / "saltreach.md").rename(d / "saltreach-2.md")
    (d / "orlinsford.md").unlink()
    (d / "blank.md").write_text("")
    r = cli("index", d, "--no-graph")
    line = next(ln for ln in r.out.splitlines() if " files: " in ln)
    seen = int(line.split(" files:")[0])
    counts = [int(w) for w in line.split(" files: ")[1].split(" · ")[0].replace(",", "").split() if w.isdigit()]
    expect(sum(counts) == seen, line)
    return f"`{line.split(' · passages')[0]}`: the counts add up to {seen}"


# -- swaps mid-sync, hostile folders and files, markup names, clocks, index files, disks, rights ------

def case_file_becomes_directory(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    target = d / "tolvenmark.md"
    target.write_text("# Tolvenmark\n\nEdited before the swap.\n")

    def swap() -> None:
        target.unlink()
        target.mkdir()

    with after_walk(swap):
        r = index(d)
    expect(r.code == 0 and skipped(d).get("tolvenmark.md") == "not-a-regular-file", f"{r.code} {skipped(d)}")
    target.rmdir()
    target.write_text("# Tolvenmark\n\nBack as a file.\n")
    r = index(d)
    expect(r.code == 0 and "tolvenmark.md" in indexed(d) and not skipped(d), str(skipped(d)))
    return "exit 0; skipped as not-a-regular-file, the other notes indexed; indexed again once it is a file"


def case_file_becomes_fifo(d: Path) -> str:
    target = d / "saltreach.md"

    def swap() -> None:
        target.unlink()
        os.mkfifo(target)

    started = time.perf_counter()
    with after_walk(swap):
        r = index(d)
    took = time.perf_counter() - started
    expect(r.code == 0 and skipped(d).get("saltreach.md") == "not-a-regular-file", f"{r.code} {skipped(d)}")
    return f"exit 0 in {took:.1f} s (no hang: opened non-blocking, checked with fstat); skipped not-a-regular-file"


def case_file_becomes_symlink_out(d: Path) -> str:
    outside = d.parent / f"{d.name}-secret.md"
    outside.write_text("# Secret\n\nSECRET-OUTSIDE the vault code is 4242.\n")
    target = d / "quillhaven.md"

    def swap() -> None:
        target.unlink()
        os.symlink(outside, target)

    with after_walk(swap):
        r = index(d)
    leaked = "4242" in text_of(d, "quillhaven.md")
    expect(r.code == 0 and not leaked and skipped(d).get("quillhaven.md") == "not-a-regular-file",
           f"{'the outside file was indexed; ' if leaked else ''}{skipped(d)}")
    r = index(d)  # the next walk sees the symlink for what it is
    expect(skipped(d).get("quillhaven.md") == "outside-root", str(skipped(d)))
    return "refused at open (O_NOFOLLOW), nothing from outside indexed; the next run lists it as outside-root"


def case_file_deleted_before_read(d: Path) -> str:
    target = d / "kallendar-workshop.md"
    with after_walk(target.unlink):
        r = index(d)
    expect(r.code == 0 and skipped(d).get("kallendar-workshop.md") == "vanished", str(skipped(d)))
    r = index(d)
    expect(r.code == 0 and not skipped(d) and len(indexed(d)) == N_EXAMPLES - 1, str(skipped(d)))
    return "exit 0; recorded as vanished, forgotten by the next run"


def case_permission_change_mid_sync(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    target = d / "marrowglass-press.md"
    target.write_text("# Marrowglass Press\n\nEdited, then locked.\n")
    real = loaders.open_regular

    def locked(path, *a, **kw):  # what a user gets after `chmod 000` between listing and reading (root reads anyway)
        if Path(path).name == target.name:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **kw)

    loaders.open_regular = locked
    try:
        r = index(d)
    finally:
        loaders.open_regular = real
    expect(r.code == 0 and skipped(d).get(target.name) == "unreadable", str(skipped(d)))
    r = index(d)  # readable again: a chmod changes no mtime, so an unreadable file is retried
    expect(r.code == 0 and "Edited, then locked" in text_of(d, target.name) and not skipped(d), "re-indexed once readable")
    return "exit 0; skipped as unreadable (permission denied), indexed again when readable"


def case_unlistable_subfolder(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    before = indexed(d)
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("/projects"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    os.scandir = scandir
    try:
        r = index(d)
    finally:
        os.scandir = real
    expect(r.code == 0 and indexed(d) == before and skipped(d) == {"projects": "unreadable"}, str(skipped(d)))
    return "exit 0; `projects` listed as unreadable and its notes kept, none deleted from the index"


def case_symlink_loops(d: Path) -> str:
    os.symlink("b", d / "a")
    os.symlink("a", d / "b")
    os.symlink(".", d / "here")
    os.symlink("..", d / "people" / "up")
    os.symlink("loop.md", d / "loop.md")
    r = index(d)
    expect(r.code == 0 and len(indexed(d)) == N_EXAMPLES and skipped(d) == {"loop.md": "not-a-regular-file"},
           str(skipped(d)))
    return "exit 0; no directory link entered, the file loop skipped as not-a-regular-file"


def case_fifo_in_folder(d: Path) -> str:
    os.mkfifo(d / "pipe.md")
    r = index(d)
    expect(r.code == 0 and skipped(d) == {"pipe.md": "not-a-regular-file"}, str(skipped(d)))
    return "exit 0; skipped from lstat, never opened"


def case_huge_single_line(d: Path) -> str:
    words = " ".join(f"word{i}" for i in range(600_000))  # ~6.5 MB, one line, under the 20 MB limit
    (d / "one-line.txt").write_text(words)
    started = time.perf_counter()
    r = index(d)
    took = time.perf_counter() - started
    with closing(_index_of(d)) as store:
        n = len(store.docs.passages_of("one-line.txt"))
    expect(r.code == 0 and n > 100, f"{r.code} {n}")
    return f"exit 0; {len(words) / 1e6:.1f} MB in one line cut into {n:,} passages in {took:.0f} s"


def case_deep_nesting(d: Path) -> str:
    path = d
    for _ in range(1200):
        path = path / "d"
        path.mkdir()  # one level at a time: pathlib's mkdir(parents=True) recurses too
    (path / "deep.md").write_text("# Deep\n\nThe Vellum well is 1,200 folders down.\n")
    r = index(d)
    expect(r.code == 0 and len(indexed(d)) == N_EXAMPLES + 1, f"{r.code} {r.err}")
    (path / "deep.md").unlink()  # bottom-up: shutil.rmtree recurses and would fail on the clean-up
    while path != d:
        path.rmdir()
        path = path.parent
    return "exit 0, the deep note indexed (the walk is iterative: no RecursionError, the sync goes on)"


def case_markup_names(d: Path) -> str:
    names = ["[bold]x[not bold].md", "a\nb.md", "\x1b[31mred.md", "x] [link=http:evil].md"]
    for n in names:
        (d / n).write_text(f"# {n!r}\n\ntext of {n!r}\n")
    (d / "[red]empty.md").write_text("")
    r = cli("index", d, "--no-graph")
    s = cli("status", d)
    expect(r.code == 0 and s.code == 0 and set(names) <= indexed(d), f"{r.code} {r.err} {s.err}")
    expect("[red]empty.md" in r.out, "the skipped name is shown as it is, not as markup")
    return "exit 0; names with rich markup, a newline and an ANSI escape indexed; shown literally, not as markup"


def case_clock_backwards(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    target = d / "orlinsford.md"
    text = target.read_text()
    target.write_text(text.replace("river", "rivel", 1))  # same size
    os.utime(target, (946684800, 946684800))  # mtime back in 2000, before the indexed one
    r = index(d)
    expect(r.code == 0 and "rivel" in text_of(d, "orlinsford.md"), "an older mtime is still a change")
    future = time.time() + 10 * 24 * 3600  # files ahead of the clock (the clock jumped back)
    for f in d.rglob("*.md"):
        os.utime(f, (future, future))
    r1, r2 = index(d), index(d)
    expect(r1.code == 0 and r2.code == 0 and len(indexed(d)) == N_EXAMPLES, f"{r1.err} {r2.err}")
    state = state_path(d / ".localrag" / "index.db")
    s = json.loads(state.read_text())
    s["checked_at"] = time.time() + 10 * 24 * 3600  # the last check "in the future"
    state.write_text(json.dumps(s))
    st = cli("status", d)
    expect(st.code == 0 and "clock is earlier" in st.out, st.out)
    return ("same-size edit dated 2000 re-indexed; files dated 10 days ahead re-read (racy rule), never lost; "
            "a check dated ahead makes status check again")


def case_index_dir_is_a_file(d: Path) -> str:
    (d / ".localrag").write_text("not a folder")
    r = index(d)
    expect(r.clean_error and r.code == 1, f"{r.code} {r.err}")
    return f"exit 1, one line: `{r.err.strip()[:70]}…`"


def case_empty_index_file(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    (d / ".localrag" / "index.db").write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        Path(str(d / ".localrag" / "index.db") + suffix).unlink(missing_ok=True)
    r = index(d)
    expect(r.code == 0 and len(indexed(d)) == N_EXAMPLES, f"{r.code} {r.err}")
    return "a 0-byte index.db is a new index: rebuilt from the notes, exit 0"


def case_wal_garbage(d: Path) -> str:
    expect(index(d).code == 0, "first index")
    wal = Path(str(d / ".localrag" / "index.db") + "-wal")
    wal.write_bytes(random.Random(5).randbytes(64 * 1024))  # a WAL that is not one (bad salt/checksums)
    r = cli("status", d)
    i = index(d)
    expect(r.code == 0 and i.code == 0 and len(indexed(d)) == N_EXAMPLES, f"{r.err} {i.err}")
    return "SQLite ignores frames whose checksums fail: status and index exit 0, every note there"


def _open_and_written(db: Path) -> bool:
    """A process holds the index open (its session file) and has written to it (the WAL or the file):
    a kill now is mid-run, whatever the size of the folder."""
    sessions = Path(str(db) + ".sessions")
    wal = Path(str(db) + "-wal")
    try:
        held = any(sessions.iterdir())
        return held and ((wal.exists() and wal.stat().st_size > 0) or (db.exists() and db.stat().st_size > 0))
    except OSError:
        return False


def case_sigkill_then_status(d: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen([sys.executable, "-m", "localrag", "index", str(d), "--no-graph", "--quiet"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = d / ".localrag" / "index.db"
    deadline = time.time() + 300
    while time.time() < deadline and not _open_and_written(db) and proc.poll() is None:
        time.sleep(0.01)
    expect(proc.poll() is None, "index finished before it could be killed")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    r = cli("status", d)
    expect(r.code == 0 and "did not close it cleanly" in r.out, r.out + r.err)
    i = index(d)
    expect(i.code == 0 and len(indexed(d)) == N_EXAMPLES, i.err)
    return "killed mid-index: the next status runs quick_check (\"did not close it cleanly\"), ok; index completes"


def case_disk_full(d: Path) -> str:
    if os.geteuid() != 0:
        raise SkipCase("needs root to mount a small tmpfs")
    mnt = Path(tempfile.mkdtemp(prefix="redteam-full-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True).returncode:
        raise SkipCase("mount is not permitted here")
    try:
        notes = mnt / "notes"
        shutil.copytree(d, notes)
        r = index(notes)
        expect(r.code == 1 and r.clean_error and "disk" in r.err.lower(), f"{r.code} {r.err}")
        first = r.err.strip()
        partial = len(indexed(notes))
        problems = check_store(notes / ".localrag" / "index.db")
        expect(not problems, f"after disk full: {problems}")
        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
        r = index(notes)
        expect(r.code == 0 and len(indexed(notes)) == N_EXAMPLES, f"{r.code} {r.err}")
        expect(not check_store(notes / ".localrag" / "index.db"), "after refill")
        return (f"2 MB tmpfs: exit 1, one line (`{first[:80]}…`), {partial} notes in, index consistent; "
                "after growing the disk the next run finishes")
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(mnt, ignore_errors=True)


def case_readonly_index_folder(d: Path) -> str:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        raise SkipCase("needs root and setpriv to run as another user")
    expect(index(d).code == 0, "first index")
    subprocess.run(["chown", "-R", "65534:65534", str(d)], check=True)
    os.chmod(d.parent, 0o755)
    (d / ".localrag").chmod(0o555)
    for f in (d / ".localrag").iterdir():
        if f.is_file():
            f.chmod(0o444)
    new = d / "new-note.md"
    new.write_text("# New\n\nThe Hathersage lock.\n")
    os.chown(new, 65534, 65534)
    try:
        s = cli_process("status", d, user="65534")
        a = cli_process("ask", "Which river?", "-f", d, "--no-answer", "--strategy", "lexical", user="65534")
        i = cli_process("index", d, "--no-graph", "--quiet", user="65534")
    finally:
        (d / ".localrag").chmod(0o755)
        subprocess.run(["chown", "-R", "0:0", str(d)], check=True)
    i_lines = i.stderr.strip().splitlines()
    expect(i.returncode == 1 and len(i_lines) == 1 and "Traceback" not in i.stderr, f"index {i.returncode} {i.stderr}")
    expect("Traceback" not in s.stderr + a.stderr, s.stderr + a.stderr)
    r = index(d)
    expect(r.code == 0 and len(indexed(d)) == N_EXAMPLES + 1, r.err)
    return (f"as a normal user: status exit {s.returncode}, ask exit {a.returncode}, index exit 1 with one line "
            f"(`{i_lines[0][:70]}…`); nothing lost, indexed once writable")


class SkipCase(Exception):
    pass


CASES: list[tuple[str, str, Callable[[Path], str]]] = [
    ("undecodable-name", "a note named `x\\xff.md` (not UTF-8)", case_undecodable_name),
    ("missing-folder", "`index /no/such/dir`", case_missing_folder),
    ("random-bytes", "4 KB of random bytes into the middle of index.db", case_random_bytes_in_the_middle),
    ("file-not-folder", "a file given where a folder is expected", case_file_not_folder),
    ("bad-strategy", "`ask --strategy nonsense`", case_bad_strategy),
    ("empty-question", "`ask \"  \"`", case_empty_question),
    ("options-first", "`--db X status DIR`, `--model M ask …`", case_options_before_command),
    ("outside-dir-link", "a symlink to a directory outside the folder", case_outside_dir_symlink),
    ("summary", "edit + rename + delete + empty file: the summary's counts", case_summary_adds_up),
    ("file-to-dir", "a note replaced by a directory between listing and reading", case_file_becomes_directory),
    ("file-to-fifo", "a note replaced by a FIFO between listing and reading", case_file_becomes_fifo),
    ("file-to-link-out", "a note replaced by a symlink to a file outside, mid-sync", case_file_becomes_symlink_out),
    ("deleted-mid-sync", "a note deleted between listing and reading", case_file_deleted_before_read),
    ("chmod-mid-sync", "a note made unreadable between listing and reading", case_permission_change_mid_sync),
    ("unlistable-dir", "a subfolder that cannot be listed (`chmod 000`)", case_unlistable_subfolder),
    ("symlink-loops", "directory symlink loops, `.`/`..` links, a file symlink to itself", case_symlink_loops),
    ("fifo", "a FIFO named like a note", case_fifo_in_folder),
    ("huge-line", "a 6.5 MB text file that is one line", case_huge_single_line),
    ("deep-nesting", "a note 1,200 folders deep", case_deep_nesting),
    ("markup-names", "file names with rich markup, a newline, an ANSI escape", case_markup_names),
    ("clock-backwards", "mtimes before the indexed ones, files ahead of the clock, a check dated ahead", case_clock_backwards),
    ("state-dir-file", "`.localrag` is a file", case_index_dir_is_a_file),
    ("empty-db", "index.db truncated to 0 bytes", case_empty_index_file),
    ("wal-garbage", "64 KB of random bytes as index.db-wal", case_wal_garbage),
    ("sigkill", "SIGKILL of `index` mid-run, then `status`", case_sigkill_then_status),
    ("disk-full", "disk full during the index write (2 MB tmpfs)", case_disk_full),
    ("read-only", "the index folder read-only for the user (another uid)", case_readonly_index_folder),
]


CASE_TIMEOUT_S = 600  # a case that hangs (a blocking read) is reported, and the run goes on


def _hung(signum, frame):
    raise TimeoutError(f"hung for {CASE_TIMEOUT_S} s")


def run_case(name: str, fn: Callable[[Path], str], work: Path) -> tuple[str, str]:
    d = work / name / "notes"
    shutil.copytree(EXAMPLES, d, ignore=shutil.ignore_patterns(".localrag"))
    signal.signal(signal.SIGALRM, _hung)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        result = fn(d)
    except SkipCase as exc:
        return "skipped", str(exc)
    except AssertionError as exc:
        return "FAILED", str(exc)[:300]
    except Exception as exc:  # the case itself broke: report it, go on
        return "FAILED", f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.alarm(0)
    db = d / ".localrag" / "index.db"
    problems = check_store(db) if db.is_file() else []
    if problems:
        return "FAILED", f"{result}; but the index has problems: {problems}"
    return "ok", result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one, removed)")
    args = parser.parse_args()
    for k in [k for k in os.environ if k.startswith("LOCALRAG_")]:
        del os.environ[k]
    localrag.embed._DEFAULT = localrag.embed.default_embedder()
    wanted = set(args.only.split(",")) if args.only else None
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="redteam-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    failed = 0
    print("| case | what was done | outcome | result (index checked like `doctor` + 19 consistency checks) |")
    print("|---|---|---|---|")
    started = time.perf_counter()
    for name, what, fn in CASES:
        if wanted and name not in wanted:
            continue
        t = time.perf_counter()
        outcome, result = run_case(name, fn, work)
        failed += outcome == "FAILED"
        print(f"| {name} | {what} | {outcome} | {result} ({time.perf_counter() - t:.0f} s) |", flush=True)
    print(f"\n{failed} failed; {time.perf_counter() - started:.0f} s wall, "
          f"{time.process_time():.0f} s CPU of this process; load average {os.getloadavg()[0]:.1f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
