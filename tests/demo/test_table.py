"""The demo table: readable rows, hints for every code the refund variants produce."""

from __future__ import annotations

from tracejudge.demo.table import HINTS, PASS_HINT, DemoRow, hint_for, render_table, shorten


def test_rows_line_up_and_carry_span_name_and_id() -> None:
    """Each run is one aligned line naming the span that caused its verdict."""
    rows = [
        DemoRow("healthy", "All done.", "pass", None, None, None, "a" * 32),
        DemoRow(
            "wrong_order",
            "Your refund for order ord_A1001 has been processed: $84.00 and more words here",
            "fail",
            "F-ACTION-ARG-ENTITY_BINDING",
            "execute_tool refund_api.create",
            "77faf498977e96bb",
            "b" * 32,
            explanation="order_id='ord_A1001' is not among the entities",
            link="http://jaeger:16686/trace/" + "b" * 32,
        ),
    ]
    lines = render_table(rows, width=60).splitlines()
    header, rule, healthy, wrong = lines[:4]
    assert header.split() == ["run", "verdict", "primary", "failure", "span"]
    assert header.index("verdict") == healthy.index("pass") == wrong.index("fail")
    assert wrong.endswith("execute_tool refund_api.create (77faf498977e96bb)")
    assert set(rule) == {"-", " "}
    assert lines[5:] == [
        f"healthy: {PASS_HINT}",
        "    said: All done.",
        f"wrong_order: {HINTS['F-ACTION-ARG-ENTITY_BINDING']}",
        "    said: Your refund for order ord_A1001 has been processe…",
        "    why: order_id='ord_A1001' is not among the entities",
        "    open: http://jaeger:16686/trace/" + "b" * 32,
    ]
    coloured = render_table(rows, colour=True).splitlines()
    assert coloured[2] == healthy.replace("pass ", "\x1b[32mpass\x1b[0m ", 1)
    assert coloured[3] == wrong.replace("fail ", "\x1b[31mfail\x1b[0m ", 1)


def test_every_expected_code_has_a_specific_hint() -> None:
    """The codes the demo is built to show get advice, unknown codes a docs pointer."""
    for code in (
        "F-OUTPUT-UNSUPPORTED_CLAIM",
        "F-ACTION-ARG-ENTITY_BINDING",
        "F-BASELINE-ARG_DRIFT",
    ):
        assert hint_for(code) == HINTS[code]
    assert hint_for("F-NEW-THING") == "see docs/failure-codes.md#f-new-thing"


def test_shorten_flattens_whitespace_and_marks_the_cut() -> None:
    """Multi-line answers become one line; a cut is visible."""
    assert shorten("a\n b   c", 10) == "a b c"
    assert shorten("abcdefghij", 5) == "abcd…"
