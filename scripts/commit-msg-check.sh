#!/usr/bin/env bash
# Commit messages as git expects them: a subject of at most 72 characters, then (if there is
# a body) a blank second line. Three ways to run it:
#
#   scripts/commit-msg-check.sh FILE          a message file (as a commit-msg hook does)
#   scripts/commit-msg-check.sh --range A..B  every commit in a range (as CI can)
#   scripts/commit-msg-check.sh --install     this repository's commit-msg hook
#
# Exits 1 and names each commit (or the file) at fault; 0 when all pass.
set -euo pipefail
max=72

# check_message NAME < MESSAGE: prints what is wrong, returns 1 if anything is
check_message() {
    local name="$1" subject second bad=0
    # comment lines (git's template) and trailing blank lines do not count
    local text
    text=$(grep -v '^#' || true)
    subject=$(printf '%s\n' "$text" | sed -n 1p)
    second=$(printf '%s\n' "$text" | sed -n 2p)
    if [ -z "$subject" ]; then
        echo "$name: the subject (first line) is empty"
        return 1
    fi
    if [ "${#subject}" -gt "$max" ]; then
        echo "$name: the subject is ${#subject} characters, at most $max: ${subject:0:60}..."
        bad=1
    fi
    if [ -n "$second" ]; then
        echo "$name: the second line is not blank; a blank line separates the subject from the body"
        bad=1
    fi
    return "$bad"
}

case "${1:-}" in
    --install)
        hooks=$(git rev-parse --git-path hooks)
        mkdir -p "$hooks"
        printf '#!/bin/sh\nexec "%s" "$1"\n' "$(cd "$(dirname "$0")" && pwd)/commit-msg-check.sh" > "$hooks/commit-msg"
        chmod +x "$hooks/commit-msg"
        echo "installed $hooks/commit-msg"
        ;;
    --range)
        range="${2:?usage: commit-msg-check.sh --range A..B}"
        status=0
        for c in $(git rev-list "$range"); do
            git log -1 --format=%B "$c" | check_message "$(git log -1 --format='%h' "$c")" || status=1
        done
        exit "$status"
        ;;
    ""|-h|--help)
        sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
        [ -n "${1:-}" ] || exit 2
        ;;
    *)
        check_message "$1" < "$1"
        ;;
esac
