"""The benchmarks as a record: collect one run's figures, or run two commits side by side.

    .venv/bin/python -m bench.record collect OUTPUT [bench/results.json]
        reads the output of `make bench` (every BENCH-RECORD line, bench/lib.py record()) and
        writes one JSON file: the commit, the time, and each bench's figures and yardsticks.
    .venv/bin/python -m bench.record compare A B [--benches postsales,gateway] [--rounds 2]
        builds each commit in a temporary worktree (B may be `.`, this tree as it is), runs each
        bench alternately in A and in B (A, B, A, B: the machine is shared, only one sitting's
        figures compare), writes bench/compare.json and prints each figure of both, run by run.

A commit whose benches print no BENCH-RECORD line still compares on its goal lines
("goal met"/"GOAL MISSED"). Worktrees share this tree's .venv and are removed at the end.
Before the first run, both builds' dependencies are installed: each commit's pyproject.toml
(its dependencies and its `bench` extra: procrastinate, py-spy) into the .venv, whatever is
missing only, and, for the emissions bench, each commit's Graphile Worker (bench/graphile,
`npm ci`; a worktree whose lock file equals this tree's shares its node_modules).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

try:  # pytest's dependency, so in the .venv of `make setup`; without it everything counts as missing
    from packaging.requirements import Requirement
except ImportError:  # pragma: no cover
    Requirement = None

from bench.lib import RECORD_PREFIX, ROOT

# The command of each `make bench-*` target (Makefile), run from the tree's root.
BENCHES = {
    "postsales": ["-m", "bench.postsales"],
    "gateway": ["-m", "bench.gateway"],
    "orchestrator": ["bench/orchestrator.py"],
    "emissions": ["bench/emissions.py"],
    "trpc": ["-m", "bench.trpc"],
    "scale": ["-m", "bench.scale"],
    "statements": ["-m", "bench.statements"],
}
GOAL_LINE = re.compile(r"^(?:goal met   |GOAL MISSED)  (?P<what>.+): (?P<value>-?[0-9.]+)")


def parse(output: str, bench: str | None = None) -> dict[str, dict]:
    """{bench: {"figures": {name: {"value", ...}}, "yardsticks": {name: value}}} of one output."""
    found: dict[str, dict] = {}
    goals: dict[str, dict] = {}
    for line in output.splitlines():
        if line.startswith(RECORD_PREFIX):
            one = json.loads(line[len(RECORD_PREFIX):])
            found[one["bench"]] = {"figures": one["figures"], "yardsticks": one["yardsticks"]}
        elif (m := GOAL_LINE.match(line)) and bench:
            goals[m["what"]] = {"value": float(m["value"])}
    if bench and bench not in found and goals:
        found[bench] = {"figures": goals, "yardsticks": {}}
    return found


def commit_of(tree: Path) -> dict[str, object]:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True, check=False).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tree,
                                capture_output=True, text=True, check=False).stdout.strip())
    return {"commit": head, "dirty": dirty}


def collect(output: Path, target: Path) -> int:
    benches = parse(output.read_text(errors="replace"))
    target.write_text(json.dumps({**commit_of(ROOT), "taken_at": datetime.datetime.now(datetime.UTC).isoformat(
        timespec="seconds"), "host": os.uname().nodename, "cores": os.cpu_count(), "benches": benches},
        indent=2, sort_keys=True) + "\n")
    print(f"[bench] {len(benches)} benches recorded in {target}", file=sys.stderr)
    return 0


def run_bench(tree: Path, bench: str, extra: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), *BENCHES[bench], *extra], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    print(proc.stdout, end="", flush=True)
    figures = parse(proc.stdout, bench).get(bench)
    if figures is None:
        sys.stderr.write(proc.stderr[-2000:])
        print(f"[bench] {bench} in {tree} printed no figures (exit {proc.returncode})", file=sys.stderr)
        return {"figures": {}, "yardsticks": {}}
    return figures


def requirements(tree: Path) -> list[str]:
    """What a build needs to run its benches: its pyproject.toml's dependencies and `bench` extra."""
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    return [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("bench", [])]


def missing(wanted: list[str]) -> list[str]:
    """The requirements that the running Python's packages do not satisfy (absent, or another version)."""
    if Requirement is None:
        return list(wanted)
    found = []
    for text in wanted:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            found.append(text)
            continue
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            found.append(text)
    return found


def install_dependencies(trees: list[Path], benches: list[str]) -> None:
    """Both builds' Python packages (into this tree's .venv, which every worktree shares) and, for
    the emissions bench, their Graphile Worker; before any bench runs, so that no round of one
    build fails on a package that the other's Makefile target would have installed."""
    wanted = list(dict.fromkeys(r for tree in trees for r in requirements(tree)))
    if absent := missing(wanted):
        print(f"[bench] installing {', '.join(absent)}", file=sys.stderr, flush=True)
        subprocess.run([str(ROOT / ".venv" / "bin" / "pip"), "install", "-q", *absent], check=True)
    if "emissions" not in benches:
        return
    ours = ROOT / "bench" / "graphile"
    for tree in dict.fromkeys([ROOT, *trees]):
        graphile = tree / "bench" / "graphile"
        if not (graphile / "package-lock.json").exists() or (graphile / "node_modules").exists():
            continue
        if tree != ROOT and (ours / "node_modules").is_dir() and \
                (graphile / "package-lock.json").read_bytes() == (ours / "package-lock.json").read_bytes():
            (graphile / "node_modules").symlink_to(ours / "node_modules")
            continue
        subprocess.run(["npm", "ci", "--prefix", str(graphile), "--no-audit", "--no-fund", "--loglevel=error"],
                       check=True)


def compare(a: str, b: str, benches: list[str], rounds: int, extra: list[str]) -> int:
    trees: dict[str, Path] = {}
    made: list[Path] = []
    try:
        for rev in (a, b):
            if rev == ".":
                trees[rev] = ROOT
                continue
            path = Path(tempfile.mkdtemp(prefix="bench-compare-"))
            subprocess.run(["git", "worktree", "add", "--detach", "-f", str(path), rev], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            (path / ".venv").symlink_to(ROOT / ".venv")
            made.append(path)
            trees[rev] = path
        install_dependencies(list(trees.values()), benches)
        runs: dict[str, dict[str, list[dict]]] = {rev: {bench: [] for bench in benches} for rev in (a, b)}
        for bench in benches:
            for number in range(rounds):
                for rev in (a, b):
                    print(f"[bench] {bench}, round {number + 1}/{rounds}: {rev}", file=sys.stderr, flush=True)
                    runs[rev][bench].append(run_bench(trees[rev], bench, extra))
        result = {rev: {**commit_of(trees[rev]), "benches": runs[rev]} for rev in (a, b)}
        (ROOT / "bench" / "compare.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"\n{'figure':<72} {a[:14]:>16} {b[:14]:>16}")
        for bench in benches:
            names = dict.fromkeys(n for r in runs[a][bench] + runs[b][bench] for n in {**r["figures"], **{
                f"yardstick: {y}": 0 for y in r["yardsticks"]}})
            for name in names:
                def values(rev: str, name: str = name, bench: str = bench) -> str:
                    got = [r["yardsticks"].get(name[len("yardstick: "):]) if name.startswith("yardstick: ")
                           else (r["figures"].get(name) or {}).get("value") for r in runs[rev][bench]]
                    return ", ".join("-" if v is None else f"{v:.4g}" for v in got)
                print(f"{bench + ': ' + name:<72.72} {values(a):>16} {values(b):>16}")
        print(f"\n(each figure: its value in each round; written to {ROOT / 'bench' / 'compare.json'})")
        return 0
    finally:
        for path in made:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False)


def command_line(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace, list[str]]:
    """The command line, and what follows `--`: arguments for every bench run (`-- --items 1000`),
    split off first (argparse takes a `--` after an optional positional for an unknown argument)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("output", type=Path)
    c.add_argument("target", type=Path, nargs="?", default=ROOT / "bench" / "results.json")
    k = sub.add_parser("compare")
    k.add_argument("a")
    k.add_argument("b", nargs="?", default=".")
    k.add_argument("--benches", default=",".join(BENCHES))
    k.add_argument("--rounds", type=int, default=2)
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    return parser, parser.parse_args(argv), extra


def main() -> int:
    parser, args, extra = command_line(sys.argv[1:])
    if args.command == "collect":
        return collect(args.output, args.target)
    unknown = set(args.benches.split(",")) - set(BENCHES)
    if unknown:
        parser.error(f"unknown benches: {', '.join(sorted(unknown))}")
    return compare(args.a, args.b, args.benches.split(","), args.rounds, extra)

if __name__ == "__main__":
    sys.exit(main())
