# One line at each further twentieth of a CMake + ninja compile, read from `pip install -v` (or
# `pip wheel -v`) output: ninja prints "[done/total] Building ..." per file, and pip -v indents
# each line of a build's output, so the count may follow blanks. Every other line is dropped (the
# install keeps the whole log and shows its tail only when the build fails).
match($0, /^[ \t]*\[[0-9]+\/[0-9]+\]/) {
  count = substr($0, RSTART, RLENGTH)
  sub(/^[ \t]*\[/, "", count)
  sub(/\]$/, "", count)
  split(count, n, "/")
  if (n[2] + 0 == 0) next
  step = int(20 * n[1] / n[2])
  if (step > shown) {
    shown = step
    printf "  %s: %d of %d files compiled (%d%%)\n", (label == "" ? "build" : label), n[1], n[2], 5 * step
    fflush()
  }
}
