"""The rubric loop: launching work, running its tasks, checkpoints, limits, follow-up turns and regrades."""
