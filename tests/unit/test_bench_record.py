"""`make bench-compare A=... ARGS="..."`: the arguments after `--` reach every bench run."""
from bench.record import command_line, parse


def test_arguments_after_the_separator_go_to_the_benches():
    _, args, extra = command_line(["compare", "main", ".", "--rounds", "2", "--benches", "emissions",
                            "--", "--workers", "2", "--items", "1000"])
    assert (args.a, args.b, args.rounds, args.benches) == ("main", ".", 2, "emissions")
    assert extra == ["--workers", "2", "--items", "1000"]


def test_without_the_separator_no_bench_arguments():
    _, args, extra = command_line(["compare", "main"])
    assert (args.a, args.b, extra) == ("main", ".", [])


def test_a_bench_run_is_read_from_its_record_line():
    out = 'noise\nBENCH-RECORD {"bench": "trpc", "figures": {"req/s": {"value": 10}}, "yardsticks": {"bare": 20}}\n'
    assert parse(out, "trpc") == {"trpc": {"figures": {"req/s": {"value": 10}}, "yardsticks": {"bare": 20}}}


def test_the_compare_installs_both_builds_bench_extras_that_are_missing():
    """Issue 43: `make bench-compare BENCHES_ONLY=emissions` ran the benches without the `bench`
    extra (procrastinate), which only `make bench-emissions` installed; the compare now reads each
    build's pyproject.toml and installs what the .venv lacks before the first run."""
    from bench.lib import ROOT
    from bench.record import missing, requirements
    wanted = requirements(ROOT)
    assert "procrastinate>=2.0" in wanted and any(r.startswith("falcon") for r in wanted)
    assert missing(["pip>=1", "no-such-package-for-the-compare>=1", "orjson>=999"]) == [
        "no-such-package-for-the-compare>=1", "orjson>=999"]
    assert missing(['orjson>=999; python_version < "3"']) == []
