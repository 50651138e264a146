#!/usr/bin/env bash
# Runs every ```sh block of README.md in order (CI runs this), except the test command
# (`cargo test --workspace`), which CI runs on its own; then builds and runs the README's
# first ```rust block in a crate of its own whose [dependencies] is the README's ```toml
# block (the path pointed at this checkout), as a new user would. A block that fails fails
# the script, naming it.
#
#   scripts/readme-commands.sh [--list]     --list prints the commands without running them
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
blocks=$(mktemp -d)
trap 'rm -rf "$blocks"' EXIT
awk -v dir="$blocks" '
    /^```sh[[:space:]]*$/ { n++; f = sprintf("%s/%03d.sh", dir, n); inside = 1; next }
    /^```/ && inside { inside = 0; close(f); next }
    inside { print > f }
' README.md
awk -v dir="$blocks" '
    /^```(toml|rust)[[:space:]]*$/ { kind = substr($0, 4); n[kind]++; inside = (n[kind] == 1); next }
    /^```/ { inside = 0; next }
    inside && kind == "toml" { print > (dir "/deps.toml") }
    inside && kind == "rust" { sub(/^# /, ""); print > (dir "/example.rs") }
' README.md
status=0
for f in "$blocks"/*.sh; do
    [ -e "$f" ] || { echo "README.md has no sh block" >&2; exit 1; }
    if grep -qx 'cargo test --workspace' "$f"; then
        continue
    fi
    echo "== README block $(basename "$f" .sh):"
    sed 's/^/   /' "$f"
    [ "${1:-}" = --list ] && continue
    if ! bash -euo pipefail "$f"; then
        echo "README block $(basename "$f" .sh) failed" >&2
        status=1
    fi
done
[ "${1:-}" = --list ] && exit "$status"
echo "== the README's dependency line and first example, in a crate of their own"
user="$blocks/user"
mkdir -p "$user/src"
{
    printf '[package]\nname = "readme-user"\nversion = "0.1.0"\nedition = "2021"\n\n'
    sed "s|path = \"[^\"]*\"|path = \"$PWD\"|" "$blocks/deps.toml"
    printf '\n[workspace]\n'
} > "$user/Cargo.toml"
{
    echo 'fn main() -> Result<(), blockcontract::Error> {'
    cat "$blocks/example.rs"
    echo '}'
} > "$user/src/main.rs"
# the checkout's target folder: the dependencies built above are reused
if ! CARGO_TARGET_DIR="$PWD/target" cargo run --quiet --release --manifest-path "$user/Cargo.toml"; then
    echo "the README's first example did not build or run in a crate of its own" >&2
    status=1
fi
exit "$status"
