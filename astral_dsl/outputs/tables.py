"""Tables that fit the terminal: a table is printed with its columns side by side when its
natural width fits, and otherwise stacked, one block per row (`field: value` lines under the
row's name), so that nothing is cut, wrapped inside a cell or printed wider than the terminal."""
from __future__ import annotations

from typing import List, Sequence

import attrs


@attrs.frozen
class Column:
    name: str
    left: bool = False          # text columns align left, numbers right


@attrs.frozen
class Table:
    title: str
    columns: Sequence[Column]
    rows: List[List[str]] = attrs.field(factory=list)
    footer: List[List[str]] = attrs.field(factory=list)   # totals, set apart from the rows
    lines: List[str] = attrs.field(factory=list)    # notes printed under the table

    def add(self, *cells: str) -> None:
        self.rows.append([str(c) for c in cells])

    def total(self, *cells: str) -> None:
        self.footer.append([str(c) for c in cells])


GAP = 2     # spaces between columns
EDGE = 1    # a space at each edge


def print_table(console, table: Table, width: int, markup=lambda s: s) -> None:
    """Print `table` on a rich console `width` columns wide. `markup` makes design text safe
    to print (terminal controls escaped, rich markup quoted)."""
    widths = _widths(table)
    if sum(widths) + GAP * (len(widths) - 1) + 2 * EDGE > width:
        stacked(console, table, markup)
        return
    console.print(f"[bold]{markup(table.title)}[/bold]", overflow="fold")
    console.print()
    console.print("[bold]" + markup(_line(table.columns, [c.name for c in table.columns],
                                          widths)) + "[/bold]", soft_wrap=True)
    console.print(" " + "─" * (sum(widths) + GAP * (len(widths) - 1)), soft_wrap=True)
    for row in table.rows:
        console.print(markup(_line(table.columns, row, widths)), soft_wrap=True)
    if table.footer:
        console.print()
        for row in table.footer:
            console.print("[bold]" + markup(_line(table.columns, row, widths)) + "[/bold]",
                          soft_wrap=True)
    console.print()


def _widths(table: Table) -> List[int]:
    """Each column's widest cell (in terminal cells), its name included."""
    from rich.cells import cell_len

    widths = [cell_len(c.name) for c in table.columns]
    for row in table.rows + table.footer:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(cell))
    return widths


def _line(columns, cells, widths) -> str:
    from rich.cells import cell_len

    out = []
    for c, cell, w in zip(columns, cells, widths):
        pad = " " * (w - cell_len(cell))
        out.append(cell + pad if c.left else pad + cell)
    return (" " * EDGE + (" " * GAP).join(out)).rstrip()


def natural_width(table: Table) -> int:
    """The width `table` takes when nothing constrains it."""
    widths = _widths(table)
    return sum(widths) + GAP * (len(widths) - 1) + 2 * EDGE


def stacked(console, table: Table, markup=lambda s: s) -> None:
    """One block per row: the first cell as a heading, then `field: value` for the others
    that hold something."""
    console.print(f"[bold]{markup(table.title)}[/bold]", overflow="fold")
    # a second text column (the instance after its level) joins the heading
    lead = 2 if len(table.columns) > 1 and table.columns[1].left else 1
    for row in table.rows + table.footer:
        head = " ".join(cell.strip() for cell in row[:lead] if cell.strip())
        lines = [f"  {markup(c.name)}: {markup(cell)}"
                 for c, cell in zip(table.columns[lead:], row[lead:])
                 if cell.strip() not in ("", "-")]
        console.print(f" {markup(head) or '-'}", overflow="fold")
        for line in lines:
            console.print(line, overflow="fold")
    console.print()
