"""The region rules on their own (cmem_cli.core.regions): which definitions enclose a line in several
languages, which lines a deletion-only hunk stands for, where written text is, when a region holds, and
that a malformed region from elsewhere is refused."""

from __future__ import annotations

import pytest

from cmem_cli.core import regions

JS = """\
export class Cart extends Base {
  total() {
    return this.items.reduce((a, b) => a + b, 0);
  }
}

export function checkout(cart) {
  if (!cart.items.length) {
    throw new Error("empty");
  }
}
"""

GO = """\
package shop

func (c *Cart) Total() int {
\tsum := 0
\treturn sum
}
"""

BLACK = """\
class Table:
    def insert(
        self,
        record,
    ):
        self.rows.append(record)
"""

PROSE = """\
Notes

  a class of objects that
  function calls are slow here
"""


@pytest.mark.parametrize(
    "text, line, expected",
    [
        (JS, 3, ["Cart"]),  # a method without a keyword: its class is what encloses it
        (JS, 9, ["checkout"]),
        (JS, 7, ["checkout"]),
        (GO, 4, ["Total"]),
        (BLACK, 6, ["insert"]),  # a signature over several lines
        (PROSE, 4, []),
    ],
)
def test_the_innermost_definition_encloses_a_line(text, line, expected):
    assert regions.enclosing(text.split("\n"), [line]) == expected


def test_a_change_that_added_nothing_stands_for_the_nearest_lines_above_and_below():
    lines = ["a = 1", "", "b = 2", "", "", "c = 3"]
    assert regions.hunk_lines(lines, [(3, 0)]) == [3, 6]  # deleted after line 3
    assert regions.hunk_lines(lines, [(4, 2)]) == [3, 6]  # added two blank lines
    assert regions.hunk_lines(lines, [(2, 3), (6, 0)]) == [3]  # added a line: that is the region


def test_written_text_is_found_where_it_is_even_when_part_of_it_was_masked():
    lines = JS.split("\n")
    region = regions.written_region(lines, '  if (!cart.items.length) {\n    throw new Error("empty");')
    assert region is not None and (region.start, region.end, region.symbols) == (8, 9, ["checkout"])
    masked = regions.written_region(lines, "  if (!cart.items.length) {\n    token = [REDACTED]")
    assert masked is not None and len(masked.lines) == 1 and masked.start == 8


def holds(region: regions.Region, data: bytes) -> bool:
    text = data.decode()
    return regions.holds(region, regions.file_keys(data), lambda names: regions.defined(text, names))


def test_a_region_holds_while_half_its_lines_and_one_definition_remain():
    before = JS.encode()
    region = regions.region_of(JS.split("\n"), [8, 9])
    assert region is not None and len(region.lines) == 2
    assert holds(region, before)
    moved = (
        "\n\n" + JS.replace('    throw new Error("empty");', '    throw new Error("no items");')
    ).encode()
    assert holds(region, moved)  # one of two lines, re-placed
    renamed = JS.replace("function checkout(", "function pay(").encode()
    assert not holds(region, renamed)
    gutted = JS.replace("  if (!cart.items.length) {\n", "").replace('    throw new Error("empty");\n', "")
    assert not holds(region, gutted.encode())


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"lines": "", "symbols": [], "at": [1, 1]},
        {"lines": "zzzzzzzz", "symbols": [], "at": [1, 1]},
        {"lines": "0000000a", "symbols": [5], "at": [1, 1]},
        {"lines": "0000000a", "symbols": [], "at": [0, 1]},
        {"lines": " ".join(["0000000a"] * 65), "symbols": [], "at": [1, 1]},
    ],
)
def test_a_malformed_region_is_refused(value):
    assert regions.Region.from_json(value) is None


def test_a_region_round_trips_through_json():
    region = regions.region_of(GO.split("\n"), [4, 5])
    assert region is not None
    assert regions.Region.from_json(region.to_json()) == region
