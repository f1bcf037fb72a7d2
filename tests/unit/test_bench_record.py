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
