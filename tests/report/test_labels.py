"""People's labels are found for a record however its path is written: through a symlinked dir, a symlink
to the record dir itself, or with ``..`` in it, as ``Path.resolve()`` would find them (``Resolver`` gives them as strings)."""

from __future__ import annotations

from rubric_runner.paths import Resolver
from rubric_runner.review.labels import PersonLabel, labels_of, save_label


def test_labels_and_resolved_paths_through_symlinks(tmp_path):
    run = tmp_path / "real" / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("[]\n")
    task = run / "tasks" / "t-r0"
    task.mkdir(parents=True)
    save_label(run, "tasks/t-r0", PersonLabel(satisfied=True))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "task-link").symlink_to(task)
    written = [tmp_path / "link" / "run" / "tasks" / "t-r0", tmp_path / "task-link", task / ".." / "t-r0", run / "tasks" / ".."]

    assert list(labels_of(written[:3])) == [str(task)]
    resolved = Resolver()
    assert [resolved(path) for path in written] == [str(path.resolve()) for path in written] == [str(task), str(task), str(task), str(run)]
