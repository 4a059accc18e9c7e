"""The mutation harness at volume (issue 33; docs/RELIABILITY.md 7.6): every example run and
synthetic runs, valid and with a planted anomaly, mutated at random by seeded classes
(tests/support/mutate_run.py, the engine tests/reliability/test_mutation.py runs a slice of),
each case checked in a child forked from this process (and, for a share, by a real
`fencepost` process), with report, trace --html, export --edn and compare on a share.

Per class it prints the cases, the exit codes of check, and the failures by kind: an exit
outside {0, 1, 2, 254}, a traceback, a command over its time, a write outside the run
directory (or through a link out of it), a verdict outside what the mutation allows (never
valid where an anomaly the documented rules catch is there), the C and Python readers
loading the run differently, a control character printed, a page whose script elements a
value broke, a real process answering otherwise. Exits 1 on any failure, printing for
each class and kind the command that reproduces one case.

    python bench/mutation_bench.py --cases 100000 --seed 1 --jobs 2
    python bench/mutation_bench.py --seed 1 --only numbers --case 17      # one case, in full
"""
from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import mutate_run as M  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=100_000, help="cases to run (default 100,000)")
    p.add_argument("--seed", type=int, default=1, help="the seed every case is made from (default 1)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes side by side (default 1)")
    p.add_argument("--only", choices=sorted(M.CLASSES), help="cases of this class only")
    p.add_argument("--case", type=int, help="with --only: run this one case and show it in full")
    p.add_argument("--subprocess-share", type=float, default=0.002,
                   help="share of commands also run as a real fencepost process (default 0.002)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="start no case after this many seconds (say so, with the count run)")
    p.add_argument("--save", type=Path, default=None, help="save the first failing case of each class and kind here")
    p.add_argument("--no-agree", action="store_true", help="skip loading each case by both readers")
    p.add_argument("--with", dest="also", action="append", default=[],
                   choices=["report", "trace", "export", "compare"],
                   help="run this command on every case too (repeatable), e.g. --with report")
    p.add_argument("--smoke", action="store_true",
                   help="a few seconds: the bases built, then 21 scheduled cases (a share run as a real "
                        "fencepost process) on 2 workers, the report table; covers every step and line "
                        "printed, not the failure rates' worth")
    args = p.parse_args(argv)
    if args.smoke:
        args.cases, args.jobs, args.subprocess_share = 21, 2, 0.05
    if args.case is not None and args.only is None:
        p.error("--case needs --only CLASS")
    if args.cases < 1 or args.jobs < 1 or not 0 <= args.subprocess_share <= 1:
        p.error("--cases and --jobs must be at least 1, --subprocess-share within 0..1")
    return args


def case_ids(args: argparse.Namespace) -> list[tuple[str, int]]:
    if args.only:
        return [(args.only, n) for n in range(args.cases)]
    return [M.scheduled(i) for i in range(args.cases)]


def with_commands(case: M.Case, also: list[str]) -> M.Case:
    """`case` also running each command of `also` it does not run yet (--with)."""
    for command in also:
        if not any(c[0] == command for c in case.commands):
            case.commands.append((command, None) if command == "trace" else
                                 (command, "default") if command == "export" else (command,))
    return case


def one_case(args: argparse.Namespace, workdir: Path) -> int:
    case = with_commands(M.make_case(args.seed, args.only, args.case), args.also)
    print(f"case {args.case} of {args.only}, seed {args.seed}: base {case.base.name} (exit {case.base.verdict})")
    print(f"mutation: {case.note}")
    if case.special:
        print(f"special: {case.special}")
    print(f"check may exit: {sorted(case.expect)} ({case.kind})")
    result = M.run_case(case, workdir, subprocess_share=args.subprocess_share, agree=not args.no_agree, keep=True)
    for ran in result.runs:
        print(f"\n$ fencepost {' '.join(a if len(a) < 80 else a[:77] + '...' for a in ran.argv)}\n"
              f"exit {ran.code if ran.code is not None else 'signal %s' % ran.signal} in {ran.seconds:.2f} s")
        for stream, data in (("stdout", ran.stdout), ("stderr", ran.stderr)):
            if data:
                print(f"--- {stream} (last 1500 bytes)\n{data[-1500:].decode('utf-8', 'backslashreplace')}")
    print(f"\nthe case's root (kept): {workdir}")
    for f in result.failures:
        print(f"FAILURE {f.kind} ({f.command}): {f.detail}")
    if args.save:
        print(f"saved: {M.save_case(case, args.save)}")
    return 1 if result.failures else 0


def worker(args: argparse.Namespace, ids: list[tuple[str, int]], out: Path, workdir: Path,
           deadline: float | None) -> None:
    """Run `ids`, one JSON line per case into `out`."""
    with open(out, "w", buffering=1) as f:
        for cls, n in ids:
            if deadline is not None and time.time() > deadline:
                break
            try:
                case = with_commands(M.make_case(args.seed, cls, n), args.also)
                result = M.run_case(case, workdir, subprocess_share=args.subprocess_share, agree=not args.no_agree)
            except Exception as e:  # the harness's own fault: said per case, the run goes on
                import traceback
                where = traceback.extract_tb(e.__traceback__)[-1]
                f.write(json.dumps({"cls": cls, "n": n, "code": None, "s": 0, "compared": False, "commands": {},
                                    "base": "?", "failures": [["harness", "make", f"{type(e).__name__}: {e} "
                                                               f"({where.filename}:{where.lineno})", ""]]}) + "\n")
                continue
            commands = collections.Counter(r.argv[0] for r in result.runs)
            f.write(json.dumps({"cls": cls, "n": n, "code": result.check_code, "s": round(result.seconds, 4),
                                "compared": any(r.compared for r in result.runs),
                                "commands": commands, "base": case.base.name,
                                "failures": [[x.kind, x.command, x.detail[:500], case.note[:300]]
                                             for x in result.failures]}) + "\n")
            if result.failures and args.save:
                marker = args.save / ".saved" / f"{cls}-{result.failures[0].kind}"
                if not marker.exists():
                    marker.parent.mkdir(parents=True, exist_ok=True)
                    marker.touch()
                    M.save_case(case, args.save)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("COLUMNS", "100")
    started = time.time()
    print("building the bases ...", file=sys.stderr)
    M.bases()
    M.warm_up()
    from tests.support import loading_support  # noqa: F401  (imported once, here, not in every child)
    gc.collect()
    gc.freeze()
    workdir = Path(tempfile.mkdtemp(prefix="fpmut-bench-", dir=M.work_parent()))
    try:
        with M.prebuilt_parser():
            return run(args, workdir, started)
    finally:
        if args.case is None:  # one case: its root is kept to look at
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path, started: float) -> int:
    if args.case is not None:
        return one_case(args, workdir)
    ids = case_ids(args)
    deadline = started + args.max_seconds if args.max_seconds else None
    outs = [workdir / f"worker-{k}.jsonl" for k in range(args.jobs)]
    pids = []
    for k in range(args.jobs):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                mine = workdir / f"w{k}"
                mine.mkdir()
                worker(args, ids[k::args.jobs], outs[k], mine, deadline)
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        pids.append(pid)
    print(f"{len(M.bases())} bases; {len(ids)} cases on {args.jobs} worker(s), seed {args.seed}", file=sys.stderr)
    alive = set(pids)
    last = time.time()
    while alive:
        time.sleep(2)
        for pid in list(alive):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                alive.discard(pid)
                if os.waitstatus_to_exitcode(status) != 0:
                    print(f"worker {pid} ended with {os.waitstatus_to_exitcode(status)}", file=sys.stderr)
        if time.time() - last >= 60:
            last = time.time()
            print(f"  {sum(_count(o) for o in outs)} cases in {last - started:.0f} s", file=sys.stderr)
    rows = [json.loads(line) for o in outs if o.exists() for line in o.read_text().splitlines() if line]
    return report(args, rows, time.time() - started, len(ids))


def _count(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 16), b""))
    except FileNotFoundError:
        return 0


def report(args: argparse.Namespace, rows: list[dict], seconds: float, asked: int) -> int:
    by_cls: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        by_cls[row["cls"]].append(row)
    codes = (0, 1, 2, 254)
    kinds = ("exit", "traceback", "timeout", "write-outside", "out-target", "verdict", "readers", "terminal",
             "page", "partial-left", "subprocess", "harness")
    print(f"\n{len(rows)} of {asked} cases, seed {args.seed}, {args.jobs} job(s), {seconds:.0f} s "
          f"({len(rows) / max(seconds, 1e-9):.1f} cases/s)" + ("" if len(rows) == asked else
                                                               "  -- stopped at --max-seconds"))
    header = f"{'class':<20} {'cases':>7} " + " ".join(f"{'exit ' + str(c):>8}" for c in codes) + \
        f" {'none':>6} {'ms':>5} {'failed':>7}  failures by kind"
    print(header)
    print("-" * len(header))
    total_failed = 0
    commands: collections.Counter = collections.Counter()
    examples: dict[tuple[str, str], tuple[dict, list]] = {}
    for cls in M.CLASSES:
        mine = by_cls.get(cls, [])
        if not mine:
            continue
        count = collections.Counter(r["code"] for r in mine)
        failed = [r for r in mine if r["failures"]]
        total_failed += len(failed)
        per_kind: collections.Counter = collections.Counter()
        for r in mine:
            commands.update(r["commands"])
            for f in r["failures"]:
                per_kind[f[0]] += 1
                examples.setdefault((cls, f[0]), (r, f))
        other = len(mine) - sum(count[c] for c in codes)
        ms = 1000 * sum(r["s"] for r in mine) / len(mine)
        print(f"{cls:<20} {len(mine):>7} " + " ".join(f"{count[c]:>8}" for c in codes) +
              f" {other:>6} {ms:>5.0f} {len(failed):>7}  " +
              ", ".join(f"{k} {per_kind[k]}" for k in kinds if per_kind[k]))
    print(f"{'all':<20} {len(rows):>7} " + " ".join(f"{sum(1 for r in rows if r['code'] == c):>8}" for c in codes) +
          f" {sum(1 for r in rows if r['code'] not in codes):>6}"
          f" {1000 * sum(r['s'] for r in rows) / max(len(rows), 1):>5.0f} {total_failed:>7}")
    print("(none: check not run, results-json, or an exit outside these; ms: wall clock a case, its commands "
          "and checks, in one worker)")
    print("commands run: " + ", ".join(f"{k} {v}" for k, v in sorted(commands.items())) +
          f"; loaded by both readers (the C reader read a file the case changed): "
          f"{sum(1 for r in rows if r.get('compared'))} cases")
    if examples:
        print("\nfailures (one case per class and kind; reproduce with the command given):")
        for (cls, kind), (row, f) in sorted(examples.items()):
            print(f"- {cls} / {kind} ({f[1]}): {row['base']}: {f[3]}\n    {f[2]}\n"
                  f"    python bench/mutation_bench.py --seed {args.seed} --only {cls} --case {row['n']}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
