"""What the traces say: metrics, statistics, figures and the report."""
