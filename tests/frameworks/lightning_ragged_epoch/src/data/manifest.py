"""Row counts of each part of the nightly clickstream export, as the exporter wrote them.

The exporter splits sessions into one part per training process; the last part gets the
remainder of the day, so it is rarely the same size as the others.
"""

EXPORT_PARTS = {
    "exports/clicks-2024-05-02": [256, 256, 256, 240],
}


def part_rows(export_dir: str, part: int) -> int:
    return EXPORT_PARTS[export_dir][part]
