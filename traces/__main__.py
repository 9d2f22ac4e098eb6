"""``python -m traces``: the column tables of docs/traces.md, from the records."""

from traces._records import EpisodeRecord, StepRecord, markdown_table

print("## episodes\n")
print(markdown_table(EpisodeRecord))
print("## steps\n")
print(markdown_table(StepRecord))
