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


def print_table(console, table: Table, width: int, markup=lambda s: s) -> None:
    """Print `table` on a rich console `width` columns wide. `markup` escapes design text."""
    from rich import box
    from rich.table import Table as Rich

    wide = Rich(title=table.title, box=box.SIMPLE_HEAD, show_footer=False, pad_edge=False,
                collapse_padding=True)
    for c in table.columns:
        wide.add_column(c.name, justify="left" if c.left else "right", no_wrap=True)
    for row in table.rows:
        wide.add_row(*[markup(cell) for cell in row])
    if table.footer:
        wide.add_section()
        for row in table.footer:
            wide.add_row(*[markup(cell) for cell in row], style="bold")
    if natural_width(table) <= width:
        console.print(wide)
        return
    stacked(console, table)


GAP = 2     # between columns (no edge padding, collapsed padding, a one-space rule)
EDGE = 2    # the box's edges, a space on each side


def natural_width(table: Table) -> int:
    """The width `table` takes when nothing constrains it: its widest cell per column (in
    terminal cells), and the gaps."""
    from rich.cells import cell_len

    widths = [cell_len(c.name) for c in table.columns]
    for row in table.rows + table.footer:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(cell))
    return sum(widths) + GAP * (len(widths) - 1) + EDGE


def stacked(console, table: Table) -> None:
    """One block per row: the first cell as a heading, then `field: value` for the others
    that hold something."""
    from rich.markup import escape

    markup = escape
    console.print(f"[bold]{markup(table.title)}[/bold]")
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
