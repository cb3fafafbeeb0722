"""An experiment's input data as ``kubebench show``, the report and ``compare`` present it: each
dataset's identity (checksum, key), size and cost, and where two experiments read different data."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..store.data_records import DataRecord
from .numbers import si


def short_checksum(checksum: str) -> str:
    """``sha256:9f2c41d0e1ab`` — the kind and the first 12 hex digits (what a reader compares)."""
    kind, _, digest = checksum.rpartition(":")
    return f"{kind}:{digest[:12]}" if kind else digest[:12]


def data_lines(found: Sequence[DataRecord], seconds: float | None) -> list[str]:
    """``data:`` and one line per dataset (none without data)."""
    if not found:
        return []
    total = f", {seconds:.1f} s before the runs (apart from their times)" if seconds is not None else ""
    lines = [f"data: {len(found)} dataset{'s' if len(found) != 1 else ''}{total}"]
    for d in found:
        how = f"prepared in {d.seconds:.1f} s" if d.prepared else f"cached ({d.seconds:.2f} s to check)"
        lines.append(f"  {d.name}: {d.files:,} files, {si(d.bytes, 'bytes')} · {short_checksum(d.checksum)} · "
                     f"key {d.key} · {how} · {d.origin}")
    return lines


def data_differences(base: Sequence[DataRecord], candidate: Sequence[DataRecord]) -> list[str]:
    """What differs between the data two experiments read, by dataset name (nothing when neither has any)."""
    before, after = {d.name: d for d in base}, {d.name: d for d in candidate}
    if not (before and after):
        if not (before or after):
            return []
        return [f"only the {'base' if before else 'candidate'} recorded the data it read "
                f"({', '.join(before or after)})"]
    lines = []
    for name in dict.fromkeys([*before, *after]):
        b, c = before.get(name), after.get(name)
        if b is None or c is None:
            lines.append(f"dataset {name} read by the {'candidate' if b is None else 'base'} only")
        elif b.checksum != c.checksum:
            lines.append(f"dataset {name}: {short_checksum(b.checksum)} → {short_checksum(c.checksum)}")
    return lines


def data_html(found: Sequence[DataRecord], seconds: float | None) -> str:
    """The report's table of an experiment's datasets (empty without data)."""
    if not found:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("dataset", "files", "size", "checksum", "key", "seconds", "how"))
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in (
            d.name, f"{d.files:,}", si(d.bytes, "bytes"), short_checksum(d.checksum), d.key, f"{d.seconds:.2f}",
            "prepared" if d.prepared else "cached")) + "</tr>" for d in found)
    note = f"<p class='meta'>data: {seconds:.1f} s before the runs, apart from their times</p>" \
        if seconds is not None else ""
    return f"{note}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def add_data(sections: list, records: Sequence, data: dict[str, Sequence[DataRecord]]) -> None:
    """Put each experiment's data table into its section of the report (the first ``len(records)``),
    and into each comparison (the next ones, one per candidate) what data differ from the base's."""
    for section, record in zip(sections, records):
        table = data_html(data[record.id], record.data_prepare_seconds)
        if table:
            section.tables.append(table)
    base = records[0]
    for section, candidate in zip(sections[len(records):], records[1:]):
        lines = data_differences(data[base.id], data[candidate.id])
        section.tables += [f"<p class='warning'>warning: data differ: {html.escape(line)}</p>" for line in lines]


def datasets_table(found: Sequence, root: str):
    """``kubebench data ls``: one row per dataset of a data root."""
    import time

    from .tables import new_table
    from .text import cell

    table = new_table(f"datasets in {root}")
    for name in ("dataset", "state", "files", "size", "key", "checksum", "prepared", "experiments"):
        table.add_column(name)
    for e in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.prepared_at)) if e.prepared_at else ""
        state = "ready" if e.ready else ("changed" if e.key else "not ready")
        users = ", ".join(e.experiments[-3:]) + (f" (+{len(e.experiments) - 3})" if len(e.experiments) > 3 else "")
        table.add_row(cell(e.name), state, f"{e.files:,}", si(e.bytes, "bytes"), e.key,
                      short_checksum(e.checksum) if e.checksum else "", when, cell(users))
    return table
