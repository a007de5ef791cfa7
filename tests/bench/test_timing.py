"""The order interleaved timing runs variants in: fair to every pair, not only to every variant."""

from __future__ import annotations

from itertools import permutations

from pipelines.bench.timing import interleaved, run_order


def test_every_variant_runs_first_and_every_pair_runs_in_each_order_equally_often() -> None:
    names = ["find", "roundtrips", "concurrent", "probe"]
    orders = [run_order(names, step) for step in range(2 * len(names))]
    assert sorted(order[0] for order in orders) == sorted(names * 2)
    for first, second in permutations(names, 2):
        before = sum(order.index(first) < order.index(second) for order in orders)
        assert before == len(orders) // 2, (first, second)


def test_interleaved_records_every_variant_on_every_question_after_the_warm_up() -> None:
    calls: list[tuple[str, int]] = []
    variants = {name: (lambda question, name=name: calls.append((name, question))) for name in ("a", "b", "c")}
    samples = interleaved(variants, list(range(7)), warmup_queries=2)
    assert {name: len(ms) for name, ms in samples.items()} == {"a": 7, "b": 7, "c": 7}
    assert len(calls) == 3 * (2 + 7)
