# lib.sh: what the hack scripts share. A script sets HACK_NAME (the prefix of its log lines)
# and sources this file: . "$(dirname "$0")/lib.sh"

log() { echo "${HACK_NAME:-hack}: $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# lock_cache DIR: needs the go command, makes the cache directory DIR and holds its lock
# until the script exits: two runs at once (a developer and a test script) would write the
# same files.
lock_cache() {
  command -v go >/dev/null || die "go is not on PATH"
  mkdir -p "$1"
  exec 9>"$1/.lock"
  flock 9
}
