"""The amount column of blkscope's progress bars (rich: imported only when a bar is drawn)."""

from __future__ import annotations

from rich.progress import DownloadColumn, ProgressColumn, Task
from rich.text import Text


class AmountColumn(ProgressColumn):
    """Bytes done of a reading bar, 'n/m steps' of a step bar, 'n/m M events' of a counting one."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = DownloadColumn()

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") == "steps":
            return Text(
                f"{int(task.completed)}/{int(task.total or 0)} steps", style="progress.download"
            )
        if task.fields.get("unit") == "events":
            done, total = task.completed / 1e6, (task.total or 0) / 1e6
            return Text(f"{done:.1f}/{total:.1f} M events", style="progress.download")
        return self.bytes.render(task)
